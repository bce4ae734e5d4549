//! Where values for id-like argument fields come from: tables named after the field or the
//! tool, and columns named like the field.

use crate::snapshot::TableShape;

fn singular(s: &str) -> &str {
    s.strip_suffix("es")
        .filter(|x| x.ends_with('s') || x.ends_with('x'))
        .or_else(|| s.strip_suffix('s'))
        .unwrap_or(s)
}

fn single_key(t: &TableShape) -> Option<String> {
    match t.key.as_slice() {
        [k] => t.columns.get(*k).cloned(),
        _ => t.columns.iter().find(|c| c.as_str() == "id").cloned(),
    }
}

/// Where an id-like field's values may come from, best first.
pub(crate) fn id_sources<'a>(
    field: &str,
    tool: &str,
    tables: &'a [TableShape],
) -> Vec<(&'a TableShape, String)> {
    let lower = field.to_ascii_lowercase();
    let stem = lower
        .strip_suffix("_id")
        .or_else(|| lower.strip_suffix("_uuid"))
        .or_else(|| field.strip_suffix("Id").map(|_| &lower[..lower.len() - 2]))
        .map(str::to_owned);
    let table_stem = |t: &TableShape| {
        let name = t
            .name
            .rsplit('.')
            .next()
            .unwrap_or(&t.name)
            .to_ascii_lowercase();
        singular(&name).to_owned()
    };
    let mut out: Vec<(&TableShape, String)> = Vec::new();
    if let Some(stem) = &stem {
        for t in tables.iter().filter(|t| table_stem(t) == singular(stem)) {
            if let Some(k) = single_key(t) {
                out.push((t, k));
            }
        }
    }
    if lower != "id" {
        for t in tables {
            if let Some(c) = t.columns.iter().find(|c| c.eq_ignore_ascii_case(field)) {
                out.push((t, c.clone()));
            }
        }
    } else {
        let words: Vec<String> = tool
            .to_ascii_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .map(|w| singular(w).to_owned())
            .collect();
        for t in tables.iter().filter(|t| words.contains(&table_stem(t))) {
            if let Some(k) = single_key(t) {
                out.push((t, k));
            }
        }
        for t in tables {
            if let Some(k) = single_key(t).filter(|k| k == "id") {
                out.push((t, k));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str, cols: &[&str], key: Option<usize>) -> TableShape {
        TableShape {
            name: name.into(),
            sql_name: name.into(),
            columns: cols.iter().map(|c| c.to_string()).collect(),
            key: key.into_iter().collect(),
            binary: vec![false; cols.len()],
        }
    }

    #[test]
    fn fields_find_their_tables() {
        let tables = [
            table("appointments", &["id", "patient_id"], Some(0)),
            table("boxes", &["id"], Some(0)),
            table("patients", &["email", "id"], Some(1)),
        ];
        let first = |field: &str, tool: &str| {
            id_sources(field, tool, &tables)
                .first()
                .map(|(t, c)| format!("{}.{c}", t.name))
        };
        assert_eq!(
            first("patient_id", "create_appointment").as_deref(),
            Some("patients.id")
        );
        assert_eq!(first("patientId", "x").as_deref(), Some("patients.id"));
        assert_eq!(
            first("id", "cancel_appointment").as_deref(),
            Some("appointments.id")
        );
        assert_eq!(first("box_id", "x").as_deref(), Some("boxes.id"));
        assert_eq!(
            first("id", "frobnicate").as_deref(),
            Some("appointments.id")
        );
        assert_eq!(first("order_id", "x"), None);
    }
}
