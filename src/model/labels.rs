//! Label selectors as the API server reads them, so that every label match in the
//! auditor is `kube`'s [`Selector`] on one reading of a `LabelSelector`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::Selector;

/// The selector a `LabelSelector` stands for; `None` when the API server would refuse
/// it (apimachinery `metav1.LabelSelectorAsSelector`: an unknown operator, `In` or
/// `NotIn` without values, `Exists` or `DoesNotExist` with some). Callers match
/// nothing with an invalid selector, as the controllers that read one do not act on it.
pub(crate) fn selector(selector: &LabelSelector) -> Option<Selector> {
    let valid = selector.match_expressions.iter().flatten().all(|e| {
        let has_values = e.values.as_ref().is_some_and(|v| !v.is_empty());
        match e.operator.as_str() {
            "In" | "NotIn" => has_values,
            "Exists" | "DoesNotExist" => !has_values,
            _ => false,
        }
    });
    valid
        .then(|| Selector::try_from(selector.clone()).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::SelectorExt;
    use std::collections::BTreeMap;

    fn read(value: serde_json::Value) -> LabelSelector {
        serde_json::from_value(value).expect("a selector")
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn valid_selectors_match_as_the_api_server_does() {
        let s = selector(&read(serde_json::json!({
            "matchLabels": {"app": "op"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "owner", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        })))
        .expect("valid");
        assert!(s.matches(&labels(&[("app", "op"), ("tier", "a"), ("owner", "x")])));
        assert!(!s.matches(&labels(&[("app", "op"), ("tier", "c"), ("owner", "x")])));
        assert!(!s.matches(&labels(&[
            ("app", "op"),
            ("tier", "a"),
            ("owner", "x"),
            ("env", "prod")
        ])));
        assert!(!s.matches(&labels(&[
            ("app", "op"),
            ("tier", "a"),
            ("owner", "x"),
            ("legacy", "")
        ])));
        let everything = selector(&read(serde_json::json!({}))).expect("valid");
        assert!(everything.matches(&labels(&[])));
    }

    #[test]
    fn selectors_the_api_server_refuses_are_none() {
        for refused in [
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["x"]}]}),
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]}),
            serde_json::json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
        ] {
            assert!(selector(&read(refused.clone())).is_none(), "{refused}");
        }
    }
}
