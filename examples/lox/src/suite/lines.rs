//! Line splitting and the few patterns the official test runner matches,
//! written out by hand (the runner has no regex engine).

/// Splits `text` into lines the way Dart's `LineSplitter` does (which the
/// official runner uses): `\n`, `\r\n` and a lone `\r` end a line; text after
/// the last terminator is a last line only if it is not empty.
pub(super) fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                lines.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                lines.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < bytes.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// The text after the first occurrence of `prefix` in `line`.
pub(super) fn after<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.find(prefix).map(|at| &line[at + prefix.len()..])
}

/// Splits `text` into a leading run of ASCII digits (at least one) and the
/// rest.
fn leading_number(text: &str) -> Option<(u32, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let number = text[..digits].parse().ok()?;
    Some((number, &text[digits..]))
}

/// `// [line N] Error...`, `// [c line N] Error...` or `// [java line N]
/// Error...` in a test file: the runner's `// \[((java|c) )?line (\d+)\]
/// (Error.*)`. Returns the tag (`None`, `Some("c")`, `Some("java")`), `N`
/// and the text from `Error` on.
pub(super) fn tagged_error_line(line: &str) -> Option<(Option<&str>, u32, &str)> {
    let mut rest = line;
    while let Some(at) = rest.find("// [") {
        let candidate = &rest[at + 4..];
        let (tag, body) = if let Some(body) = candidate.strip_prefix("c line ") {
            (Some("c"), body)
        } else if let Some(body) = candidate.strip_prefix("java line ") {
            (Some("java"), body)
        } else if let Some(body) = candidate.strip_prefix("line ") {
            (None, body)
        } else {
            rest = &rest[at + 1..];
            continue;
        };
        if let Some((number, tail)) = leading_number(body)
            && let Some(error) = tail.strip_prefix("] ").filter(|e| e.starts_with("Error"))
        {
            return Some((tag, number, error));
        }
        rest = &rest[at + 1..];
    }
    None
}

/// A compile error on the interpreter's stderr: the runner's greedy
/// `\[.*line (\d+)\] (Error.+)`, returned as `[N] Error...`.
pub(super) fn reported_error(line: &str) -> Option<String> {
    let bracket = line.find('[')?;
    // The greedy `.*` makes the last matching "line " win.
    let mut search = &line[bracket + 1..];
    let mut candidates = Vec::new();
    let mut offset = bracket + 1;
    while let Some(at) = search.find("line ") {
        candidates.push(offset + at);
        offset += at + 1;
        search = &line[offset..];
    }
    candidates.into_iter().rev().find_map(|at| {
        let (number, tail) = leading_number(&line[at + 5..])?;
        let error = tail.strip_prefix("] ")?;
        (error.starts_with("Error") && error.len() > "Error".len())
            .then(|| format!("[{number}] {error}"))
    })
}

/// The line number of a stack-trace line: the first `[line N]` in `line`.
pub(super) fn stack_trace_line(line: &str) -> Option<u32> {
    let mut rest = line;
    while let Some(at) = rest.find("[line ") {
        if let Some((number, tail)) = leading_number(&rest[at + 6..])
            && tail.starts_with(']')
        {
            return Some(number);
        }
        rest = &rest[at + 1..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_dart_line_splitter() {
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("a"), ["a"]);
        assert_eq!(split_lines("a\n"), ["a"]);
        assert_eq!(split_lines("a\n\n"), ["a", ""]);
        assert_eq!(split_lines("a\r\nb\rc\n"), ["a", "b", "c"]);
    }

    #[test]
    fn tagged_error_lines() {
        assert_eq!(
            tagged_error_line("// [line 3] Error at 'x': Bad."),
            Some((None, 3, "Error at 'x': Bad."))
        );
        assert_eq!(
            tagged_error_line("foo; // [c line 12] Error: Unexpected character."),
            Some((Some("c"), 12, "Error: Unexpected character."))
        );
        assert_eq!(
            tagged_error_line("// [java line 2] Error at end: Expect ';'."),
            Some((Some("java"), 2, "Error at end: Expect ';'."))
        );
        assert_eq!(tagged_error_line("// [line x] Error"), None);
        assert_eq!(tagged_error_line("// [line 2] Oops"), None);
        assert_eq!(tagged_error_line("// [go line 2] Error: x"), None);
    }

    #[test]
    fn reported_errors() {
        assert_eq!(
            reported_error("[line 5] Error at 'a': Boom."),
            Some("[5] Error at 'a': Boom.".to_owned())
        );
        assert_eq!(
            reported_error("[c line 5] Error: Unterminated string."),
            Some("[5] Error: Unterminated string.".to_owned())
        );
        assert_eq!(reported_error("[line 5] Error"), None);
        assert_eq!(reported_error("line 5] Error: x"), None);
        assert_eq!(reported_error("Undefined variable 'x'."), None);
        // Greedy: the last "line N] Error" after the first '[' wins.
        assert_eq!(
            reported_error("[line 1] Error at 'x': see [line 2] Error: y"),
            Some("[2] Error: y".to_owned())
        );
    }

    #[test]
    fn stack_trace_lines() {
        assert_eq!(stack_trace_line("[line 7] in script"), Some(7));
        assert_eq!(
            stack_trace_line("[line x] in f() [line 12] in g()"),
            Some(12)
        );
        assert_eq!(stack_trace_line("line 7 in script"), None);
    }
}
