//! Lenient leaf types for the typed wire structs. Each accepts any JSON value: the expected type
//! gives `Some`, anything else gives `None` (skipped without building it), so a field that
//! changes type in a new CLI version costs that field, not the whole line.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A string, borrowed from the line when it has no escapes.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The string, or "" when absent.
    pub fn or_empty(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }

    pub fn to_owned_string(&self) -> Option<String> {
        self.0.as_deref().map(str::to_owned)
    }
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Visitor methods that answer `None` for every value a leaf type does not want.
macro_rules! ignore_others {
    ($($skip:ident),*) => {
        $(ignore_others!(@one $skip);)*
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq).map(|()| Default::default())
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            drain_map(map).map(|()| Default::default())
        }
        fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (@one bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (@one num) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
    (@one str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
                Ok(Str(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'a>, E> {
                Ok(Str(Some(Cow::Owned(v))))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Str<'a>, D::Error> {
                Str::deserialize(d)
            }
            ignore_others!(bool, num);
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A non-negative integer (a float is truncated; a numeric string is read).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Num(pub Option<u64>);

impl Num {
    pub fn or_zero(self) -> u64 {
        self.0.unwrap_or(0)
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(u64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num((v.is_finite() && v >= 0.0).then_some(v as u64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                Ok(Num(v.trim().parse().ok()))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Num, D::Error> {
                Num::deserialize(d)
            }
            ignore_others!(bool);
        }
        d.deserialize_any(V)
    }
}

/// A signed integer (epoch seconds and the like).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Int(pub Option<i64>);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                Ok(Int(i64::try_from(v).ok()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                Ok(Int(Some(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int, E> {
                Ok(Int(v.is_finite().then_some(v as i64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Int, E> {
                Ok(Int(v.trim().parse().ok()))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Int, D::Error> {
                Int::deserialize(d)
            }
            ignore_others!(bool);
        }
        d.deserialize_any(V)
    }
}

/// A number as `f64`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Float(pub Option<f64>);

impl<'de> Deserialize<'de> for Float {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Float;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Float, E> {
                Ok(Float(Some(v as f64)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Float, E> {
                Ok(Float(Some(v as f64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Float, E> {
                Ok(Float(Some(v)))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Float, D::Error> {
                Float::deserialize(d)
            }
            ignore_others!(bool, str);
        }
        d.deserialize_any(V)
    }
}

/// A boolean.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Flag(pub Option<bool>);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Flag;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Flag, E> {
                Ok(Flag(Some(v)))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Flag, D::Error> {
                Flag::deserialize(d)
            }
            ignore_others!(num, str);
        }
        d.deserialize_any(V)
    }
}

/// A list of `T`; anything but an array gives an empty list. (Each element must still be a `T`.)
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct List<T>(pub Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List<T>, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element()? {
                    out.push(item);
                }
                Ok(List(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<List<T>, A::Error> {
                drain_map(map).map(|()| List::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<List<T>, D::Error> {
                List::deserialize(d)
            }
            fn visit_unit<E: de::Error>(self) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<List<T>, E> {
                Ok(List::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<List<T>, E> {
                Ok(List::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// An error that is either a string or an object with a `message` (and maybe a `type`, `code`).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ErrorField<'a> {
    pub message: Option<Cow<'a, str>>,
    pub kind: Option<Cow<'a, str>>,
    pub code: Option<i64>,
}

impl<'de: 'a, 'a> Deserialize<'de> for ErrorField<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize, Default)]
        #[serde(default)]
        struct Obj<'a> {
            #[serde(borrow)]
            message: Str<'a>,
            #[serde(rename = "type", borrow)]
            kind: Str<'a>,
            code: Int,
            status: Int,
        }
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = ErrorField<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ErrorField {
                    message: Some(Cow::Borrowed(v)),
                    ..ErrorField::default()
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ErrorField {
                    message: Some(Cow::Owned(v.to_owned())),
                    ..ErrorField::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let o = Obj::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ErrorField {
                    message: o.message.0,
                    kind: o.kind.0,
                    code: o.code.0.or(o.status.0),
                })
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                ErrorField::deserialize(d)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ErrorField::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ErrorField::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                drain_seq(seq).map(|()| ErrorField::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ErrorField::default())
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(ErrorField {
                    code: Some(v),
                    ..ErrorField::default()
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(ErrorField {
                    code: i64::try_from(v).ok(),
                    ..ErrorField::default()
                })
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ErrorField::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl ErrorField<'_> {
    pub fn is_empty(&self) -> bool {
        self.message.is_none() && self.kind.is_none() && self.code.is_none()
    }

    /// "type: message", or whichever of them is present.
    pub fn describe(&self) -> String {
        match (self.kind.as_deref(), self.message.as_deref()) {
            (Some(k), Some(m)) => format!("{k}: {m}"),
            (Some(k), None) => k.to_owned(),
            (None, Some(m)) => m.to_owned(),
            (None, None) => self.code.map(|c| format!("error {c}")).unwrap_or_default(),
        }
    }
}

/// Usage in the Anthropic shape (also accepted from `modelUsage`'s camelCase keys).
#[derive(Debug, Default, Clone, Copy, serde::Deserialize)]
#[serde(default)]
pub(crate) struct AnthropicUsage {
    #[serde(alias = "inputTokens")]
    pub input_tokens: Num,
    #[serde(alias = "outputTokens")]
    pub output_tokens: Num,
    #[serde(alias = "cacheReadInputTokens")]
    pub cache_read_input_tokens: Num,
    #[serde(alias = "cacheCreationInputTokens")]
    pub cache_creation_input_tokens: Num,
    #[serde(rename = "costUSD")]
    pub cost_usd: Float,
}

impl AnthropicUsage {
    pub fn to_usage(self) -> super::Usage {
        super::Usage {
            input: self.input_tokens.or_zero(),
            output: self.output_tokens.or_zero(),
            cache_read: self.cache_read_input_tokens.or_zero(),
            cache_write: self.cache_creation_input_tokens.or_zero(),
            reasoning: 0,
        }
    }
}

/// A nested object read as `T`; anything but an object gives `None` (skipped without building
/// it), so a field that stops being an object costs that field, not the whole line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<T> Obj<T> {
    pub fn as_ref(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Obj<T>, D::Error> {
                Obj::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Obj<T>, A::Error> {
                drain_seq(seq).map(|()| Obj(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Obj<T>, E> {
                Ok(Obj(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}
