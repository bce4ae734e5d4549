//! The cases file: per tool, argument sets and the setup SQL to run before each.
//!
//! TOML (or JSON with the same shape, chosen by the `.json` extension):
//!
//! ```toml
//! [[case]]
//! tool = "cancel_booking"
//! name = "an existing booking"          # optional; shown in reports
//! setup = "INSERT INTO bookings (id, guest) VALUES (900, 'x') ON CONFLICT DO NOTHING"
//! arguments = { id = 900 }
//! ```
//!
//! `setup` may also be a list of scripts. A tool with cases in the file is called with those
//! only; other tools get arguments generated from their input schema.

use serde::Deserialize;
use serde_json::Value;

use crate::error::VerifyError;

/// One argument set for one tool.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The tool to call.
    pub tool: String,
    /// A label for reports; defaults to `case N`.
    #[serde(default)]
    pub name: Option<String>,
    /// The arguments (a JSON object); empty when omitted.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// SQL run on the test database before the case (one script or several).
    #[serde(default, deserialize_with = "one_or_many")]
    pub setup: Vec<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CasesFile {
    #[serde(default, alias = "cases")]
    case: Vec<Case>,
}

/// Every case of a cases file, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cases {
    cases: Vec<Case>,
}

impl Cases {
    /// Parses TOML, or JSON when `json` is true.
    pub fn parse(text: &str, json: bool) -> Result<Cases, String> {
        let file: CasesFile = if json {
            serde_json::from_str(text).map_err(|e| e.to_string())?
        } else {
            toml::from_str(text).map_err(|e| e.to_string())?
        };
        for (i, c) in file.case.iter().enumerate() {
            if !c.arguments.is_object() {
                return Err(format!(
                    "case {} ({}): arguments must be a table/object",
                    i + 1,
                    c.tool
                ));
            }
        }
        Ok(Cases { cases: file.case })
    }

    /// Reads and parses a file (`.json` is JSON, anything else TOML).
    pub fn load(path: &std::path::Path) -> Result<Cases, VerifyError> {
        let err = |message: String| VerifyError::Cases {
            path: path.display().to_string(),
            message: crate::error::one_line(&message),
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        Cases::parse(&text, json).map_err(err)
    }

    /// Adds a case at the end.
    pub fn push(&mut self, case: Case) {
        self.cases.push(case);
    }

    /// The cases for one tool, in file order.
    pub fn for_tool<'a>(&'a self, tool: &'a str) -> impl Iterator<Item = &'a Case> + 'a {
        self.cases.iter().filter(move |c| c.tool == tool)
    }

    /// Tools named by cases, for checking they exist.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.cases.iter().map(|c| c.tool.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_and_json_read_the_same() {
        let toml = r#"
            [[case]]
            tool = "cancel"
            setup = "INSERT INTO b VALUES (1)"
            arguments = { id = 1 }
            [[case]]
            tool = "cancel"
            name = "twice"
            setup = ["DELETE FROM b", "INSERT INTO b VALUES (2)"]
            arguments = { id = 2 }
            [[case]]
            tool = "list"
        "#;
        let json = r#"{"cases": [
            {"tool": "cancel", "setup": "INSERT INTO b VALUES (1)", "arguments": {"id": 1}},
            {"tool": "cancel", "name": "twice", "setup": ["DELETE FROM b", "INSERT INTO b VALUES (2)"], "arguments": {"id": 2}},
            {"tool": "list"}]}"#;
        let a = Cases::parse(toml, false).unwrap();
        let b = Cases::parse(json, true).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.for_tool("cancel").count(), 2);
        assert_eq!(a.for_tool("list").next().unwrap().arguments, empty_object());
    }

    #[test]
    fn bad_files_are_reported() {
        assert!(Cases::parse("[[case]]\ntool = 1", false).is_err());
        assert!(Cases::parse("[[case]]\ntool = \"x\"\narguments = 3", false).is_err());
        assert!(Cases::parse("[[case]]\ntool = \"x\"\nbogus = 3", false).is_err());
    }
}
