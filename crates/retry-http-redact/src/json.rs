//! JSON as it may be shown (what `--until-json` found, or wants, in a body): secrets told
//! by the names of the members that hold them, at any depth. Pure.

use super::MASK;
use super::headers::header_value;
use super::names::is_secret_name;
use serde_json::Value;

/// A JSON value as the log may show it: the value of every member whose name marks a
/// secret (`password`, `api_key`, `token`, ...: see [`is_secret_name`]) is `"***"`, at any
/// depth, and a string holding a URL or a userinfo is masked as a header value holding one
/// would be ([`header_value`]); a string that holds a JSON object or array is masked as
/// that document.
pub fn json_value(v: &Value) -> Value {
    match v {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| {
                    let shown = if is_secret_name(k) {
                        Value::String(MASK.into())
                    } else {
                        json_value(v)
                    };
                    (k.clone(), shown)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(json_value).collect()),
        // A string that holds a JSON document (an API that nests one as text) is masked as
        // that document, and shown re-serialised.
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Object(_) | Value::Array(_))) => {
                Value::String(json_value(&inner).to_string())
            }
            _ => Value::String(header_value("", s)),
        },
        other => other.clone(),
    }
}
