use super::*;

fn nested(open: &str, middle: &str, close: &str, depth: usize) -> String {
    format!("{}{middle}{}", open.repeat(depth), close.repeat(depth))
}

#[test]
fn ordinary_python_is_within_the_bounds() {
    let module = r#"
import kopf, logging

@kopf.on.create("example.com", "v1", "things", labels={"a": "b"})
async def create_fn(spec, name, logger, **_):
    for item in spec.get("items", []):
        if item and not item.startswith("x") or len(item) > 3:
            logger.info(f"{name}: {item!r} {[i for i in range(3) if i % 2]}")
    return {"a": [1, 2, {"b": (3, 4)}], "c": lambda x: x + 1 if x else -x}
"#;
    assert_eq!(python_depth(module), Ok(()));
    let long_literal = format!("DATA = [{}]\n", "-1, ".repeat(100_000));
    assert_eq!(python_depth(&long_literal), Ok(()), "commas make siblings");
}

#[test]
fn deep_python_of_every_kind_is_refused_before_parsing() {
    let cases = [
        ("attributes", format!("x = a{}\n", ".a".repeat(100_000))),
        ("sums", format!("x = 1{}\n", "+1".repeat(100_000))),
        ("unary", format!("x = {}1\n", "~".repeat(100_000))),
        ("not", format!("x = {}y\n", "not ".repeat(100_000))),
        ("calls", format!("x = f{}\n", "()".repeat(100_000))),
        ("subscripts", format!("x = a{}\n", "[0]".repeat(100_000))),
        (
            "ternaries",
            format!("x = {}0\n", "1 if y else ".repeat(100_000)),
        ),
        ("lambdas", format!("x = {}0\n", "lambda: ".repeat(100_000))),
        (
            "awaits",
            format!("async def f():\n    {}x\n", "await ".repeat(100_000)),
        ),
        ("parentheses", nested("(", "1", ")", 500_000)),
        ("lists", nested("[", "", "]", 100_000)),
        (
            "f-strings",
            format!("x = {}\n", nested("f'{", "1", "}'", 1_000)),
        ),
    ];
    for (kind, text) in cases {
        let refused = python_depth(&text);
        assert!(refused.is_err(), "{kind}: {refused:?}");
    }
}

#[test]
fn python_at_cpython_s_bracket_limit_is_read() {
    assert_eq!(python_depth(&nested("(", "1", ")", 199)), Ok(()));
    assert!(python_depth(&nested("(", "1", ")", 201)).is_err());
}

#[test]
fn ordinary_yaml_is_within_the_bounds() {
    let yaml = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: x, labels: {a: "[[[", b: '{{{'}}
data:
  script: |
    if [ -f x ]; then echo '[[[[[[[[[[' ; fi
    {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{
  other: [a, [b, {c: d}]] # [[[[ a comment
---
- - - - - x
"#;
    assert_eq!(yaml_depth(yaml), Ok(()));
}

#[test]
fn deep_yaml_is_refused_before_parsing() {
    assert!(yaml_depth(&nested("[", "", "]", 100_000)).is_err());
    assert!(yaml_depth(&format!("a: {}\n", nested("{a: ", "1", "}", 200))).is_err());
    assert!(yaml_depth(&format!("{}x\n", "- ".repeat(100_000))).is_err());
    assert!(yaml_depth(&format!("{}x: 1\n", " ".repeat(600))).is_err());
    assert_eq!(yaml_depth(&nested("[", "", "]", 128)), Ok(()));
}
