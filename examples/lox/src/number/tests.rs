use super::c_table::C_PRINTF_G;
use super::format_number;

fn g(value: f64) -> String {
    format_number(value).to_string()
}

#[test]
fn matches_c_printf_for_the_whole_table() {
    let mut mismatches = Vec::new();
    for &(bits, expected) in C_PRINTF_G {
        let value = f64::from_bits(bits);
        let actual = g(value);
        if actual != expected {
            mismatches.push(format!(
                "{bits:#018x} ({value:e}): C {expected:?}, ours {actual:?}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn small_integers_take_the_integer_path() {
    assert_eq!(g(0.0), "0");
    assert_eq!(g(-0.0), "-0");
    assert_eq!(g(7.0), "7");
    assert_eq!(g(-42.0), "-42");
    assert_eq!(g(999_999.0), "999999");
    assert_eq!(g(-999_999.0), "-999999");
}

#[test]
fn switches_to_exponent_form_at_a_million() {
    assert_eq!(g(1_000_000.0), "1e+06");
    assert_eq!(g(999_999.5), "1e+06");
    assert_eq!(g(1_234_567.0), "1.23457e+06");
    assert_eq!(g(-1e100), "-1e+100");
}

#[test]
fn switches_to_exponent_form_below_a_ten_thousandth() {
    assert_eq!(g(0.0001), "0.0001");
    assert_eq!(g(0.00001), "1e-05");
    assert_eq!(g(0.000_099_999_96), "0.0001");
    assert_eq!(g(0.000_123_456), "0.000123456");
}

#[test]
fn strips_trailing_zeros() {
    assert_eq!(g(1.5), "1.5");
    assert_eq!(g(0.1 + 0.2), "0.3");
    assert_eq!(g(123.456), "123.456");
    assert_eq!(g(2.5e-7), "2.5e-07");
}

#[test]
fn rounds_ties_to_even_on_exact_binary_values() {
    // 1234565 and 123456.5 are exact in binary: true ties.
    assert_eq!(g(1_234_565.0), "1.23456e+06");
    assert_eq!(g(1_234_575.0), "1.23458e+06");
    assert_eq!(g(123_456.5), "123456");
}

#[test]
fn prints_non_finite_values_as_glibc() {
    assert_eq!(g(f64::INFINITY), "inf");
    assert_eq!(g(f64::NEG_INFINITY), "-inf");
    assert_eq!(g(f64::NAN), "nan");
    assert_eq!(g(-f64::NAN), "-nan");
}

#[test]
fn handles_the_extremes() {
    assert_eq!(g(f64::MAX), "1.79769e+308");
    assert_eq!(g(f64::MIN_POSITIVE), "2.22507e-308");
    assert_eq!(g(f64::from_bits(1)), "4.94066e-324");
}
