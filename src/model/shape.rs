//! Parsing a tenant's objects within a budget. The API server bounds an object's JSON
//! (about 1.5 MiB), not its shape: 1.3 MiB of tiny maps (`[{"a":0},{"a":0},...]`)
//! parse into about 116 MiB of `serde_json::Value`, since every non-empty map is a
//! B-tree node of its own. Here a parse counts what it builds, as it builds it, and
//! stops building (it still reads the rest of the JSON, without keeping it) once an
//! object's estimate passes its [`Budget`] or its nesting passes [`MAX_DEPTH`]: the
//! object is then marked over budget and its caller reads nothing from it. What a list
//! holds is reduced to what the caller needs one object at a time, so a page holds its
//! JSON text and one object's tree at most.
//!
//! `metadata.managedFields` is read as manager, time and subresource only:
//! `fieldsV1` mirrors the object's shape and is never kept.

use jiff::Timestamp;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::fmt;

/// The estimated heap bytes one object's parse may build, its comparison with its
/// diff-base included: far above what a usual object needs (its JSON's size, give or
/// take), far below what 1.5 MiB of tiny maps would.
pub(crate) const OBJECT_BUDGET_BYTES: usize = 4 << 20;

/// The deepest nesting kept, below serde_json's own limit of 128 (which fails the
/// whole parse): deeper values make the object over budget instead.
pub(crate) const MAX_DEPTH: usize = 64;

/// What one `Value` slot costs (an array element; a map value is in [`ENTRY`]), with
/// room for a `Vec`'s doubling.
const SLOT: usize = 64;
/// What a non-empty map costs before its entries: one B-tree leaf of 11 keys and values.
const MAP_NODE: usize = 640;
/// What one map entry costs besides its key's bytes: a `String` and a `Value` in a
/// leaf that is two-thirds full on average.
const ENTRY: usize = 96;
/// What a `String`'s allocation costs besides its bytes.
const STRING: usize = 16;
/// What one managed-fields entry kept costs besides its strings.
const MANAGED: usize = 96;

/// The estimated bytes a parse may still build; once spent, it is over.
#[derive(Debug)]
pub(crate) struct Budget {
    left: Cell<usize>,
    over: Cell<bool>,
}

impl Budget {
    /// A budget of `bytes`.
    pub(crate) fn new(bytes: usize) -> Budget {
        Budget {
            left: Cell::new(bytes),
            over: Cell::new(false),
        }
    }

    /// Spends `bytes`; false (and over for good) when they are not left.
    pub(crate) fn spend(&self, bytes: usize) -> bool {
        if self.over.get() {
            return false;
        }
        match self.left.get().checked_sub(bytes) {
            Some(left) => {
                self.left.set(left);
                true
            }
            None => {
                self.exceed();
                false
            }
        }
    }

    /// Marks the budget spent.
    fn exceed(&self) {
        self.left.set(0);
        self.over.set(true);
    }

    /// Whether something was left out: the estimate or the nesting passed the bound.
    pub(crate) fn is_over(&self) -> bool {
        self.over.get()
    }

    /// What a `Value`, already built, would cost to copy (see [`Budget::spend`]).
    pub(crate) fn cost(value: &Value) -> usize {
        match value {
            Value::String(s) => s.len() + STRING,
            Value::Array(a) => a.iter().map(|v| SLOT + Budget::cost(v)).sum::<usize>() + SLOT,
            Value::Object(m) if m.is_empty() => SLOT,
            Value::Object(m) => {
                MAP_NODE
                    + m.iter()
                        .map(|(k, v)| ENTRY + k.len() + Budget::cost(v))
                        .sum::<usize>()
            }
            _ => SLOT,
        }
    }
}

/// Parses JSON text into a `Value` within `budget`: `None` when it is not JSON, or when
/// it does not fit (the budget is then over).
pub(crate) fn value_within(text: &str, budget: &Budget) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Node { budget, depth: 0 }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    (!budget.is_over()).then_some(value)
}

/// A value of the tree, parsed within a budget at a depth.
struct Node<'b> {
    budget: &'b Budget,
    depth: usize,
}

impl Node<'_> {
    fn child(&self) -> Node<'_> {
        Node {
            budget: self.budget,
            depth: self.depth + 1,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.depth > MAX_DEPTH {
            self.budget.exceed();
        }
        if self.budget.is_over() {
            // serde_json skips a value without recursion and without keeping it.
            IgnoredAny::deserialize(d)?;
            return Ok(Value::Null);
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(match self.budget.spend(v.len() + STRING) {
            true => Value::String(v.to_owned()),
            false => Value::Null,
        })
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(match self.budget.spend(v.len() + STRING) {
            true => Value::String(v),
            false => Value::Null,
        })
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self.child())? {
            if self.budget.spend(SLOT) {
                out.push(v);
            }
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut first = true;
        while let Some(key) = map.next_key::<String>()? {
            let cost = ENTRY + key.len() + if first { MAP_NODE } else { 0 };
            first = false;
            let kept = self.budget.spend(cost);
            let v = map.next_value_seed(self.child())?;
            if kept && !self.budget.is_over() {
                out.insert(key, v);
            }
        }
        Ok(Value::Object(out))
    }
}

/// One entry of `metadata.managedFields`, without its `fieldsV1`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub(crate) struct ManagedEntry {
    /// Who wrote the fields.
    #[serde(default)]
    pub(crate) manager: Option<String>,
    /// When, as written (RFC 3339); see [`ManagedEntry::at`].
    #[serde(default)]
    pub(crate) time: Option<String>,
    /// `status` for a status writer, none for the main resource.
    #[serde(default)]
    pub(crate) subresource: Option<String>,
}

impl ManagedEntry {
    /// When the fields were written, if the time is one.
    pub(crate) fn at(&self) -> Option<Timestamp> {
        self.time.as_deref()?.parse().ok()
    }
}

/// One object of a list, parsed within its own budget.
#[derive(Debug)]
pub(crate) struct ParsedObject {
    /// The object as JSON, `metadata` without `managedFields`; what was left out once
    /// the budget was spent is missing.
    pub(crate) body: Value,
    /// `metadata.managedFields`, reduced to [`ManagedEntry`].
    pub(crate) managed: Vec<ManagedEntry>,
    /// `metadata.name` and `metadata.namespace`, kept whatever the budget.
    pub(crate) name: String,
    /// See `name`; empty for cluster-scoped objects.
    pub(crate) namespace: String,
    /// What is left of the object's budget, for its reading: once over, the body is
    /// incomplete and nothing may be concluded from it.
    pub(crate) budget: Budget,
}

/// A page of a list, its items reduced one at a time.
#[derive(Debug)]
pub(crate) struct Page<T> {
    /// The reduced items, in order (those the reduction kept).
    pub(crate) items: Vec<T>,
    /// The continue token, if more follow.
    pub(crate) continue_token: Option<String>,
}

/// Parses a Kubernetes list (`{"metadata": {"continue": ...}, "items": [...]}`): each
/// item within a budget of `budget_bytes`, handed to `reduce` as soon as it is parsed
/// and dropped after it.
pub(crate) fn list<T>(
    text: &str,
    budget_bytes: usize,
    reduce: impl FnMut(ParsedObject) -> Option<T>,
) -> Result<Page<T>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let page = ListSeed {
        budget_bytes,
        reduce,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(page)
}

/// The list's metadata, of which only the continue token is read.
#[derive(Deserialize)]
struct ListMeta {
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

struct ListSeed<F> {
    budget_bytes: usize,
    reduce: F,
}

impl<'de, T, F: FnMut(ParsedObject) -> Option<T>> DeserializeSeed<'de> for ListSeed<F> {
    type Value = Page<T>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Page<T>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, T, F: FnMut(ParsedObject) -> Option<T>> Visitor<'de> for ListSeed<F> {
    type Value = Page<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes list")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Page<T>, A::Error> {
        let mut page = Page {
            items: Vec::new(),
            continue_token: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "metadata" => {
                    let meta: Option<ListMeta> = map.next_value()?;
                    page.continue_token = meta.and_then(|m| m.continue_token);
                }
                "items" => map.next_value_seed(Items {
                    budget_bytes: self.budget_bytes,
                    reduce: &mut self.reduce,
                    out: &mut page.items,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

struct Items<'a, T, F> {
    budget_bytes: usize,
    reduce: &'a mut F,
    out: &'a mut Vec<T>,
}

impl<'de, T, F: FnMut(ParsedObject) -> Option<T>> DeserializeSeed<'de> for Items<'_, T, F> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T, F: FnMut(ParsedObject) -> Option<T>> Visitor<'de> for Items<'_, T, F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list's items")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(object) = seq.next_element_seed(ObjectSeed(self.budget_bytes))? {
            if let Some(item) = (self.reduce)(object) {
                self.out.push(item);
            }
        }
        Ok(())
    }
}

struct ObjectSeed(usize);

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = ParsedObject;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ParsedObject, D::Error> {
        let budget = Budget::new(self.0);
        let mut managed = Vec::new();
        let (body, name, namespace) = d.deserialize_map(ObjectVisitor {
            budget: &budget,
            managed: &mut managed,
        })?;
        Ok(ParsedObject {
            body,
            managed,
            name,
            namespace,
            budget,
        })
    }
}

struct ObjectVisitor<'a> {
    budget: &'a Budget,
    managed: &'a mut Vec<ManagedEntry>,
}

impl<'de> Visitor<'de> for ObjectVisitor<'_> {
    type Value = (Value, String, String);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut body = Map::new();
        let mut name = String::new();
        let mut namespace = String::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match key.as_str() {
                "metadata" => map.next_value_seed(MetaSeed {
                    budget: self.budget,
                    managed: &mut *self.managed,
                    name: &mut name,
                    namespace: &mut namespace,
                })?,
                _ => map.next_value_seed(Node {
                    budget: self.budget,
                    depth: 1,
                })?,
            };
            if !self.budget.is_over() {
                body.insert(key, value);
            }
        }
        Ok((Value::Object(body), name, namespace))
    }
}

struct MetaSeed<'a> {
    budget: &'a Budget,
    managed: &'a mut Vec<ManagedEntry>,
    name: &'a mut String,
    namespace: &'a mut String,
}

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object's metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        self.budget.spend(MAP_NODE);
        while let Some(key) = map.next_key::<String>()? {
            let value = match key.as_str() {
                // Names are bounded by the API server (253 bytes): always kept, so that
                // an object over budget can still be named.
                "name" | "namespace" => {
                    let v: Option<String> = map.next_value()?;
                    let v = v.unwrap_or_default();
                    match key.as_str() {
                        "name" => self.name.clone_from(&v),
                        _ => self.namespace.clone_from(&v),
                    }
                    Value::String(v)
                }
                "managedFields" => {
                    map.next_value_seed(Managed {
                        budget: self.budget,
                        out: &mut *self.managed,
                    })?;
                    continue;
                }
                _ => map.next_value_seed(Node {
                    budget: self.budget,
                    depth: 2,
                })?,
            };
            if self.budget.spend(ENTRY + key.len()) {
                out.insert(key, value);
            }
        }
        Ok(Value::Object(out))
    }
}

struct Managed<'a> {
    budget: &'a Budget,
    out: &'a mut Vec<ManagedEntry>,
}

impl<'de> DeserializeSeed<'de> for Managed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Managed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("managedFields")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<ManagedEntry>()? {
            let strings = [&entry.manager, &entry.subresource, &entry.time]
                .iter()
                .map(|s| s.as_ref().map_or(0, |s| s.len() + STRING))
                .sum::<usize>();
            if self.budget.spend(MANAGED + strings) {
                self.out.push(entry);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
