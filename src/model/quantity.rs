//! Parses Kubernetes memory quantities (`256Mi`, `1G`, `0.5Gi`, `128974848`, `129e6`)
//! to bytes, so thresholds compare numbers, not strings.

/// Bytes in a quantity, or `None` when it is not a quantity.
pub(crate) fn bytes(quantity: &str) -> Option<f64> {
    let q = quantity.trim();
    let split = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let value: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        s if s.starts_with(['e', 'E']) => 10f64.powi(s[1..].parse().ok()?),
        _ => return None,
    };
    let total = value * factor;
    total.is_finite().then_some(total)
}

/// A byte count for messages: `128Mi`, `1.5Gi`, `1000` .
pub(crate) fn human(bytes: f64) -> String {
    const UNITS: [(&str, f64); 3] = [
        ("Gi", 1024.0 * 1024.0 * 1024.0),
        ("Mi", 1024.0 * 1024.0),
        ("Ki", 1024.0),
    ];
    for (unit, size) in UNITS {
        if bytes >= size {
            let v = bytes / size;
            return if (v - v.round()).abs() < 0.05 {
                format!("{}{unit}", v.round())
            } else {
                format!("{v:.1}{unit}")
            };
        }
    }
    format!("{bytes}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_and_decimal_suffixes() {
        assert_eq!(bytes("256Mi"), Some(268_435_456.0));
        assert_eq!(bytes("1Gi"), Some(1_073_741_824.0));
        assert_eq!(bytes("512M"), Some(512e6));
        assert_eq!(bytes("129e6"), Some(129e6));
        assert_eq!(bytes("1000"), Some(1000.0));
        assert_eq!(bytes("0.5Gi"), Some(536_870_912.0));
        assert_eq!(bytes("lots"), None);
        assert_eq!(bytes("12Qi"), None);
        assert_eq!(bytes(""), None);
    }

    #[test]
    fn prints_readably() {
        assert_eq!(human(268_435_456.0), "256Mi");
        assert_eq!(human(1.5 * 1024.0 * 1024.0 * 1024.0), "1.5Gi");
        assert_eq!(human(100.0), "100");
    }
}
