//! kopf's `json` format: one pass over the line, allocating only for the
//! keys kopf writes (a quick reader for simple lines, serde for the rest).

use super::Parser;
use super::bounded::{bounded_redacted, truncate_redacted, truncate_string};
use super::plain::parse_prefix;
use super::traceback::Tb;
use crate::classify::{self, forbidden_kind};
use crate::quick_json::{self, Value, Visit};
use crate::time::{HourCache, Timestamp, parse_rfc3339_cached};
use crate::version;
use crate::{EventKind, Level, LogFormat, ObjectRef, Record};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

#[cfg_attr(test, derive(Debug, PartialEq))]
enum ExcInfo {
    Text(String),
    Lines(Vec<String>),
}

#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct JsonFields {
    message: Option<String>,
    timestamp: Option<Timestamp>,
    severity: Option<Level>,
    levelname: Option<Level>,
    logger: Option<String>,
    object: Option<ObjectRef>,
    exc_info: Option<ExcInfo>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Message,
    Timestamp,
    Severity,
    Levelname,
    Logger,
    Object,
    ExcInfo,
    Other,
}

struct KeySeed<'a> {
    refkey: &'a str,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(Key::of(v.as_bytes(), self.refkey))
    }
}

impl Key {
    /// What a top-level key of a JSON line holds (serde's [`KeySeed`] and
    /// [`QuickFields`] read the same keys).
    fn of(k: &[u8], refkey: &str) -> Key {
        match k {
            b"message" => Key::Message,
            b"timestamp" | b"asctime" | b"time" => Key::Timestamp,
            b"severity" => Key::Severity,
            b"levelname" | b"level" => Key::Levelname,
            b"name" | b"logger" => Key::Logger,
            b"exc_info" => Key::ExcInfo,
            b"object" => Key::Object,
            k if k == refkey.as_bytes() => Key::Object,
            _ => Key::Other,
        }
    }
}

struct LineSeed<'a> {
    refkey: &'a str,
}

impl<'de> DeserializeSeed<'de> for LineSeed<'_> {
    type Value = JsonFields;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<JsonFields, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LineSeed<'_> {
    type Value = JsonFields;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonFields, A::Error> {
        let mut out = JsonFields::default();
        while let Some(key) = map.next_key_seed(KeySeed {
            refkey: self.refkey,
        })? {
            match key {
                Key::Message => out.message = map.next_value_seed(Lenient)?,
                Key::Timestamp => out.timestamp = map.next_value_seed(Parsed(parse_ts))?,
                Key::Severity => out.severity = map.next_value_seed(Parsed(Level::parse))?,
                Key::Levelname => out.levelname = map.next_value_seed(Parsed(Level::parse))?,
                Key::Logger => out.logger = map.next_value_seed(Lenient)?,
                Key::Object => out.object = map.next_value_seed(ObjectSeed)?,
                Key::ExcInfo => out.exc_info = map.next_value_seed(ExcSeed)?,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// The `visit_*` methods of a visitor whose value is an `Option`: booleans,
/// numbers and `null` read as `None` (serde's defaults refuse them). Written
/// once for the `DeserializeSeed` visitors that want only a string, a map or a list.
macro_rules! scalars_are_none {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// Any JSON value: strings and scalars as text, containers skipped.
struct Lenient;

impl<'de> DeserializeSeed<'de> for Lenient {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Lenient {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

fn parse_ts(s: &str) -> Option<Timestamp> {
    Timestamp::parse_rfc3339(s)
}

/// A string value parsed in place (no allocation); other values are skipped.
struct Parsed<T>(fn(&str) -> Option<T>);

impl<'de, T> DeserializeSeed<'de> for Parsed<T> {
    type Value = Option<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T> Visitor<'de> for Parsed<T> {
    type Value = Option<T>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok((self.0)(v))
    }
    scalars_are_none!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Lenient.visit_seq(seq).map(|_| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Lenient.visit_map(map).map(|_| None)
    }
}

/// kopf's `object` (`apiVersion, kind, name, uid, namespace`); anything else is skipped.
struct ObjectSeed;

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = Option<ObjectRef>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

struct ObjKey(u8);

impl<'de> de::Deserialize<'de> for ObjKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ObjKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ObjKey, E> {
                Ok(ObjKey(match v {
                    "name" => 1,
                    "namespace" => 2,
                    "kind" => 3,
                    "uid" => 4,
                    "apiVersion" => 5,
                    _ => 0,
                }))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Visitor<'de> for ObjectSeed {
    type Value = Option<ObjectRef>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object reference")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut name, mut namespace, mut kind, mut uid, mut api_version) =
            (None, None, None, None, None);
        while let Some(ObjKey(k)) = map.next_key()? {
            match k {
                1 => name = map.next_value_seed(Lenient)?,
                2 => namespace = map.next_value_seed(Lenient)?,
                3 => kind = map.next_value_seed(Lenient)?,
                4 => uid = map.next_value_seed(Lenient)?,
                5 => api_version = map.next_value_seed(Lenient)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(object_ref([name, namespace, kind, uid, api_version]))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Lenient.visit_seq(seq).map(|_| None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    scalars_are_none!();
}

/// kopf's object reference from its JSON fields `name, namespace, kind, uid,
/// apiVersion` (each cut at 512 bytes): none without a name, no namespace when it is
/// empty.
fn object_ref(fields: [Option<String>; 5]) -> Option<ObjectRef> {
    let [name, namespace, kind, uid, api_version] = fields;
    let cap = |s: Option<String>| {
        s.map(|mut s| {
            truncate_string(&mut s, 512);
            s
        })
    };
    cap(name).map(|name| ObjectRef {
        namespace: cap(namespace).filter(|n| !n.is_empty()),
        name,
        kind: cap(kind),
        uid: cap(uid),
        api_version: cap(api_version),
    })
}

/// The fields of a simple JSON line (see [`quick_json::walk`]) read without
/// serde: what [`LineSeed`] reads, or `None` wherever the two could differ
/// (a key read twice, a scalar other than a string or `null` where a string
/// is read, `exc_info`), and serde reads the line.
///
/// Exists because serde's cost per string is high for these short ones: in
/// `Keep` mode, where every JSON line is read, this saved 8% of the scan.
fn quick_fields(text: &str, refkey: &str, hours: &HourCache) -> Option<JsonFields> {
    let mut q = QuickFields {
        refkey,
        ..QuickFields::default()
    };
    quick_json::walk(text.as_bytes(), &mut q)?;
    let owned = |b: Option<&[u8]>| -> Option<Option<String>> {
        match b {
            Some(b) => Some(Some(within(text, b)?.to_owned())),
            None => Some(None),
        }
    };
    let parsed = |b: Option<&[u8]>| b.and_then(|b| within(text, b));
    let object = match q.object {
        Some([name, namespace, kind, uid, api_version]) => object_ref([
            owned(name)?,
            owned(namespace)?,
            owned(kind)?,
            owned(uid)?,
            owned(api_version)?,
        ]),
        None => None,
    };
    Some(JsonFields {
        message: owned(q.message)?,
        timestamp: parsed(q.timestamp).and_then(|t| {
            // `parse_ts` with the remembered second: a pod's lines share it.
            let (ts, used) = parse_rfc3339_cached(t.as_bytes(), hours)?;
            (used == t.len()).then_some(ts)
        }),
        severity: parsed(q.severity).and_then(Level::parse),
        levelname: parsed(q.levelname).and_then(Level::parse),
        logger: owned(q.logger)?,
        object,
        exc_info: None,
    })
}

/// The namespace and name of a simple JSON line's object reference, as raw
/// bytes of the line (see [`quick_json::walk`]); `None` when the line is not
/// simple or has no object name. Exists to count a routine record per object
/// without building it.
pub(super) fn quick_object<'a>(l: &'a [u8], refkey: &str) -> Option<(Option<&'a [u8]>, &'a [u8])> {
    let mut q = QuickFields {
        refkey,
        ..QuickFields::default()
    };
    quick_json::walk(l, &mut q)?;
    let [name, namespace, ..] = q.object?;
    Some((namespace, name?))
}

/// `part` (a slice of `text`'s bytes between two quotes) as text, without
/// validating its UTF-8 again.
fn within<'t>(text: &'t str, part: &[u8]) -> Option<&'t str> {
    let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    text.get(at..at.checked_add(part.len())?)
}

/// The [`Visit`] of [`quick_fields`]: the raw string values of kopf's keys.
#[derive(Default)]
struct QuickFields<'a, 'k> {
    refkey: &'k str,
    /// The top-level keys read so far, one bit per [`Key`].
    seen: u16,
    /// The last top-level key.
    current: Option<Key>,
    /// The last key in `object`: 0 name, 1 namespace, 2 kind, 3 uid, 4 apiVersion.
    object_key: Option<usize>,
    /// The keys read in `object`, one bit each.
    object_seen: u8,
    /// The current top-level value is the `object` map.
    in_object: bool,
    message: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    severity: Option<&'a [u8]>,
    levelname: Option<&'a [u8]>,
    logger: Option<&'a [u8]>,
    /// name, namespace, kind, uid, apiVersion.
    object: Option<[Option<&'a [u8]>; 5]>,
}

impl<'a> Visit<'a> for QuickFields<'a, '_> {
    const DEPTH: u32 = 2;

    fn key(&mut self, depth: u32, key: &'a [u8]) -> Option<()> {
        if depth == 1 {
            let k = Key::of(key, self.refkey);
            self.current = Some(k);
            self.in_object = false;
            if k != Key::Other {
                let bit = 1 << k as u16;
                if self.seen & bit != 0 {
                    return None;
                }
                self.seen |= bit;
            }
        } else if self.in_object {
            self.object_key = match key {
                b"name" => Some(0),
                b"namespace" => Some(1),
                b"kind" => Some(2),
                b"uid" => Some(3),
                b"apiVersion" => Some(4),
                _ => None,
            };
            if let Some(k) = self.object_key {
                if self.object_seen & (1 << k) != 0 {
                    return None;
                }
                self.object_seen |= 1 << k;
            }
        }
        Some(())
    }

    fn value(&mut self, depth: u32, value: Value<'a>) -> Option<()> {
        if depth == 2 {
            let (true, Some(k)) = (self.in_object, self.object_key) else {
                return Some(());
            };
            let slot = self.object.as_mut().and_then(|o| o.get_mut(k))?;
            *slot = string_or_null(value)?;
            return Some(());
        }
        let slot = match self.current? {
            Key::Message => &mut self.message,
            Key::Timestamp => &mut self.timestamp,
            Key::Severity => &mut self.severity,
            Key::Levelname => &mut self.levelname,
            Key::Logger => &mut self.logger,
            Key::Object => {
                // serde's `ObjectSeed` reads anything but a map as no object.
                if value == Value::Object {
                    self.in_object = true;
                    self.object = Some([None; 5]);
                }
                return Some(());
            }
            Key::ExcInfo => return None,
            Key::Other => return Some(()),
        };
        *slot = string_or_null(value)?;
        Some(())
    }
}

/// A string value, or none for `null`; `None` for what serde would read
/// otherwise (`Lenient` reads a boolean as text, a container as none).
fn string_or_null(value: Value<'_>) -> Option<Option<&[u8]>> {
    match value {
        Value::Str(s) => Some(Some(s)),
        Value::Null => Some(None),
        Value::Bool | Value::Object | Value::Array => None,
    }
}

/// `exc_info`: a string, or a list of strings (`exc_info_as_array`).
struct ExcSeed;

impl<'de> DeserializeSeed<'de> for ExcSeed {
    type Value = Option<ExcInfo>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ExcSeed {
    type Value = Option<ExcInfo>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a traceback")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(ExcInfo::Text(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(ExcInfo::Text(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut v = Vec::new();
        while let Some(s) = seq.next_element_seed(Lenient)? {
            if let Some(s) = s
                && v.len() < 10_000
            {
                v.push(s);
            }
        }
        Ok(Some(ExcInfo::Lines(v)))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Lenient.visit_map(map).map(|_| None)
    }
    scalars_are_none!();
}

#[cfg(test)]
mod tests;

impl Parser {
    pub(super) fn json(
        &mut self,
        l: &[u8],
        whole: Option<&str>,
        kubelet: Option<Timestamp>,
        line: u64,
    ) -> Option<Record> {
        let refkey = self.opts.refkey.as_deref().unwrap_or("object");
        let seed = LineSeed { refkey };
        let quick = whole.and_then(|text| quick_fields(text, refkey, &self.json_hours));
        let fields = match (quick, whole) {
            (Some(fields), _) => fields,
            // Already valid UTF-8: serde_json skips re-validating each string.
            (None, Some(text)) => {
                let mut de = serde_json::Deserializer::from_str(text);
                let f = seed.deserialize(&mut de).ok()?;
                de.end().ok()?;
                f
            }
            (None, None) => {
                let mut de = serde_json::Deserializer::from_slice(l);
                let f = seed.deserialize(&mut de).ok()?;
                de.end().ok()?;
                f
            }
        };
        let Some(mut message) = fields.message else {
            // JSON, but not kopf's: keep the raw line.
            let c = classify::classify(l, whole, &self.finders);
            let (message, truncated) = bounded_redacted(l, whole, self.opts.max_message_bytes);
            return Some(Record {
                timestamp: kubelet,
                kubelet_timestamp: kubelet,
                level: None,
                logger: None,
                object: None,
                message,
                kind: c.kind,
                format: None,
                traceback: Vec::new(),
                forbidden: c.forbidden,
                request: c.request,
                version: None,
                line,
                truncated,
            });
        };
        // `--log-prefix` also prefixes JSON messages.
        let mut object = fields.object;
        if let Some((o, rest)) = parse_prefix(message.as_bytes(), Some(&message)) {
            let skip = message.len() - rest.len();
            object = object.or(Some(o));
            message.drain(..skip);
        }
        let c = classify::classify(message.as_bytes(), Some(&message), &self.finders);
        let version = version::signal(message.as_bytes());
        if let Some(v) = version {
            self.stats.kopf_version.narrow(v.range);
        }
        let mut forbidden = c.forbidden;
        let mut traceback = Vec::new();
        if let Some(exc) = fields.exc_info {
            let mut tb = Tb::new(self.opts.max_traceback_lines);
            let max_bytes = self.opts.max_traceback_line_bytes;
            let finders = &self.finders;
            let mut each = |t: &str| {
                let b = t.as_bytes();
                tb.push_line(b, max_bytes);
                if forbidden.is_none() {
                    forbidden = finders.forbidden_in(b);
                }
            };
            match exc {
                ExcInfo::Text(s) => s.lines().for_each(&mut each),
                ExcInfo::Lines(v) => v.iter().flat_map(|s| s.lines()).for_each(&mut each),
            }
            traceback = tb.into_lines();
        }
        let kind = match c.kind {
            EventKind::Other | EventKind::RequestRetry { .. } if forbidden.is_some() => forbidden
                .clone()
                .map(forbidden_kind)
                .unwrap_or(EventKind::Other),
            k => k,
        };
        let level = fields.severity.or(fields.levelname);
        let timestamp = fields.timestamp.or(kubelet);
        let truncated = truncate_redacted(&mut message, self.opts.max_message_bytes);
        Some(Record {
            timestamp,
            kubelet_timestamp: kubelet,
            level,
            logger: fields.logger,
            object,
            message,
            kind,
            format: Some(LogFormat::Json),
            traceback,
            forbidden,
            request: c.request,
            version,
            line,
            truncated,
        })
    }
}
