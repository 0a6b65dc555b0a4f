//! Tag names: the built-in categories of `hotmem-os` plus the ones an
//! embedder registers, readable without locking or allocating.

use crate::sync::{Mutex, OnceLock};
use hotmem_os::MemTag;
use thiserror::Error;

/// Tags a tracker accounts for: numbers `0..MAX_TAGS`. The built-in tags sit
/// below [`MemTag::FIRST_CUSTOM`], registered ones above it.
pub const MAX_TAGS: usize = 128;

/// How many custom tags can be registered.
pub const MAX_CUSTOM_TAGS: usize = MAX_TAGS - MemTag::FIRST_CUSTOM as usize;

/// The longest custom tag name, in bytes.
pub const MAX_TAG_NAME: usize = 64;

/// Why a custom tag could not be registered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TagError {
    /// The name is empty or only white space.
    #[error("tag name is empty")]
    EmptyName,
    /// The name is longer than [`MAX_TAG_NAME`](crate::MAX_TAG_NAME) bytes.
    #[error("tag name of {len} bytes is longer than {max}")]
    NameTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Every custom tag number is taken.
    #[error("all {capacity} custom tags are registered")]
    Full {
        /// How many custom tags there can be.
        capacity: usize,
    },
}

/// Names of custom tags. Append-only: a slot is written once, before its tag
/// is handed out, so readers never lock.
pub(crate) struct TagRegistry {
    names: [OnceLock<Box<str>>; MAX_CUSTOM_TAGS],
    registered: Mutex<usize>,
}

impl Default for TagRegistry {
    fn default() -> Self {
        TagRegistry {
            names: std::array::from_fn(|_| OnceLock::new()),
            registered: Mutex::new(0),
        }
    }
}

impl TagRegistry {
    /// The tag named `name`, registering it if it is new.
    pub(crate) fn register(&self, name: &str) -> Result<MemTag, TagError> {
        if name.trim().is_empty() {
            return Err(TagError::EmptyName);
        }
        if name.len() > MAX_TAG_NAME {
            return Err(TagError::NameTooLong {
                len: name.len(),
                max: MAX_TAG_NAME,
            });
        }
        if let Some(&tag) = MemTag::BUILTIN
            .iter()
            .find(|t| t.builtin_name() == Some(name))
        {
            return Ok(tag);
        }
        let mut registered = self.registered.lock();
        if let Some(i) = self.names[..*registered]
            .iter()
            .position(|n| n.get().map(|n| &**n) == Some(name))
        {
            return Ok(custom_tag(i));
        }
        if *registered == MAX_CUSTOM_TAGS {
            return Err(TagError::Full {
                capacity: MAX_CUSTOM_TAGS,
            });
        }
        let i = *registered;
        self.names[i]
            .set(name.into())
            .expect("slots past `registered` are empty");
        *registered += 1;
        Ok(custom_tag(i))
    }

    /// The name of `tag`, `None` for an unregistered number.
    #[inline]
    pub(crate) fn name(&self, tag: MemTag) -> Option<&str> {
        if let Some(n) = tag.builtin_name() {
            return Some(n);
        }
        let i = usize::from(tag.raw()).checked_sub(usize::from(MemTag::FIRST_CUSTOM))?;
        self.names.get(i)?.get().map(|n| &**n)
    }
}

fn custom_tag(index: usize) -> MemTag {
    MemTag::from_raw(MemTag::FIRST_CUSTOM + index as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_is_idempotent_and_bounded() {
        let r = TagRegistry::default();
        let a = r.register("Compiler arena").unwrap();
        assert_eq!(a.raw(), MemTag::FIRST_CUSTOM);
        assert!(a.is_custom());
        assert_eq!(r.register("Compiler arena").unwrap(), a);
        assert_eq!(r.register("Code").unwrap(), MemTag::CODE);
        assert_eq!(r.name(a), Some("Compiler arena"));
        assert_eq!(r.name(MemTag::JAVA_HEAP), Some("Java Heap"));
        assert_eq!(r.name(MemTag::from_raw(MemTag::FIRST_CUSTOM + 1)), None);
        assert_eq!(r.register(" "), Err(TagError::EmptyName));
        assert!(matches!(
            r.register(&"x".repeat(MAX_TAG_NAME + 1)),
            Err(TagError::NameTooLong { .. })
        ));
        for i in 1..MAX_CUSTOM_TAGS {
            r.register(&format!("tag {i}")).unwrap();
        }
        assert_eq!(
            r.register("one too many"),
            Err(TagError::Full {
                capacity: MAX_CUSTOM_TAGS
            })
        );
        let last = MemTag::from_raw((MAX_TAGS - 1) as u16);
        assert_eq!(r.name(last), Some(&*format!("tag {}", MAX_CUSTOM_TAGS - 1)));
    }
}
