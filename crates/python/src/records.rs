//! Records for `Deduper.process`, read while the GIL is held: dicts one by one, Arrow
//! columns (a pandas DataFrame through pyarrow) by name; each unusable record a reject naming
//! its position, as the CLI names a line.

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_pyarrow::{FromPyArrow, Table};
use arrow_schema::DataType;
use neardup::pipeline::Source;
use neardup::{Record, TextField, Timestamp};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::texts::{is_arrow, not_a_text, string_at};

/// Records per committed batch, as `neardup dedup --batch-size`.
const BATCH: usize = 4096;

/// The field names `process` reads.
pub(crate) struct Names<'a> {
    pub(crate) id: &'a str,
    pub(crate) text: Vec<String>,
    pub(crate) url: &'a str,
    pub(crate) first_seen: &'a str,
}

impl<'a> Names<'a> {
    /// The names a call gives (`text=` as [`text_fields`] reads it).
    pub(crate) fn new(
        id: &'a str,
        text: Option<&Bound<'_, PyAny>>,
        url: &'a str,
        first_seen: &'a str,
    ) -> PyResult<Names<'a>> {
        Ok(Names {
            id,
            text: text_fields(text)?,
            url,
            first_seen,
        })
    }
}

/// The text fields read when `text=` is not given, whichever a record has, as the CLI's
/// `--text-field` default.
pub(crate) const DEFAULT_TEXT_FIELDS: [&str; 4] = ["title", "description", "body_text", "text"];

/// `text=`: one field name or a list of them (default [`DEFAULT_TEXT_FIELDS`]).
fn text_fields(text: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(text) = text else {
        return Ok(DEFAULT_TEXT_FIELDS.iter().map(|&s| s.to_owned()).collect());
    };
    if let Ok(s) = text.cast::<PyString>() {
        return Ok(vec![s.to_cow()?.into_owned()]);
    }
    let names: Vec<String> = text
        .extract()
        .map_err(|_| PyTypeError::new_err("text: a field name or a list of field names"))?;
    if names.is_empty() {
        return Err(PyValueError::new_err("text: at least one field name"));
    }
    Ok(names)
}

/// One input record: the record, or why it is rejected; with its position.
pub(crate) type Item = (usize, Result<Record, Rejected>);

/// An unusable record: its id where it has one, its position, and why.
#[derive(Clone)]
pub(crate) struct Rejected {
    pub(crate) id: Option<String>,
    pub(crate) pos: usize,
    /// Why, without the position (a scale-out job's rows have none to give).
    pub(crate) why: String,
}

impl Rejected {
    /// Why, naming the record's position as the CLI names a line: `records[3]: ...`.
    pub(crate) fn reason(&self) -> String {
        format!("records[{}]: {}", self.pos, self.why)
    }
}

/// The records are read (and checked) while the GIL is held; the runner takes them as
/// they are.
pub(crate) struct Items;

impl Source for Items {
    type Item = Item;
    type Extra = usize;
    type Reject = (usize, Rejected);

    fn parse(&self, (pos, item): Item) -> Result<(Record, usize), (usize, Rejected)> {
        item.map(|r| (r, pos)).map_err(|e| (pos, e))
    }

    fn host(&self, (_, item): &Item) -> Option<String> {
        item.as_ref().ok().and_then(|r| r.effective_host())
    }

    fn size(&self, (_, item): &Item) -> usize {
        item.as_ref()
            .map_or(0, |r| r.fields.iter().map(|f| f.text.len()).sum())
    }
}

pub(crate) fn chunked(items: Vec<Item>) -> Vec<Vec<Item>> {
    let mut chunks = Vec::with_capacity(items.len() / BATCH + 1);
    let mut it = items.into_iter().peekable();
    while it.peek().is_some() {
        chunks.push(it.by_ref().take(BATCH).collect());
    }
    chunks
}

/// Reads `records` into items: dicts one by one, Arrow columns (a pandas DataFrame through
/// pyarrow) by name.
pub(crate) fn read_records(
    py: Python<'_>,
    records: &Bound<'_, PyAny>,
    names: &Names<'_>,
) -> PyResult<Vec<Item>> {
    if records.hasattr("to_dict")? && records.hasattr("columns")? && !is_arrow(records)? {
        // A pandas DataFrame: through pyarrow, as its columns are.
        let table = py
            .import("pyarrow")?
            .getattr("Table")?
            .call_method1("from_pandas", (records,))?;
        return read_records(py, &table, names);
    }
    if records.hasattr("__arrow_c_stream__")? || records.hasattr("__arrow_c_array__")? {
        let batches = if records.hasattr("num_columns")? && records.hasattr("to_batches")? {
            Table::from_pyarrow_bound(records)?.into_inner().0
        } else if records.hasattr("__arrow_c_array__")? {
            vec![RecordBatch::from_pyarrow_bound(records)?]
        } else {
            Table::from_pyarrow_bound(records)?.into_inner().0
        };
        let mut items = Vec::new();
        for batch in &batches {
            read_batch(batch, names, &mut items)?;
        }
        return Ok(items);
    }
    let mut items = Vec::new();
    for (pos, obj) in records.try_iter()?.enumerate() {
        let obj = obj?;
        let dict =
            obj.cast::<PyDict>().map_err(|_| {
                PyTypeError::new_err(format!(
                "records[{pos}] is {}, not a dict (or pass a pyarrow Table or a pandas DataFrame)",
                obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
            })?;
        items.push((pos, record_of_dict(dict, pos, names)?));
    }
    Ok(items)
}

/// A record from a dict, or why it is rejected.
pub(crate) fn record_of_dict(
    dict: &Bound<'_, PyDict>,
    pos: usize,
    names: &Names<'_>,
) -> PyResult<Result<Record, Rejected>> {
    let id = match dict.get_item(names.id)? {
        // Named by its place, as the CLI names a line without an id by its number.
        None => (pos + 1).to_string(),
        Some(v) if v.is_none() => (pos + 1).to_string(),
        Some(v) => match v.cast::<PyString>() {
            Ok(s) => s.to_cow()?.into_owned(),
            Err(_) => match v.extract::<i64>() {
                Ok(n) => n.to_string(),
                Err(_) => {
                    let why = format!(
                        "field {:?} must be a non-empty string or a number",
                        names.id
                    );
                    return Ok(Err(reject(None, pos, why)));
                }
            },
        },
    };
    if id.trim().is_empty() {
        let why = format!(
            "field {:?} must be a non-empty string or a number",
            names.id
        );
        return Ok(Err(reject(None, pos, why)));
    }
    let mut fields = Vec::with_capacity(names.text.len());
    for name in &names.text {
        let text = match dict.get_item(name.as_str())? {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => match v.cast::<PyString>() {
                Ok(s) => Some(s.to_cow()?.into_owned()),
                Err(_) => {
                    let why = not_a_text(&v, &format!("field {name:?}")).to_string();
                    return Ok(Err(reject(Some(id), pos, why)));
                }
            },
        };
        if let Some(text) = text {
            fields.push(TextField {
                name: name.clone(),
                text,
                weight: 1,
            });
        }
    }
    fields.retain(|f| !f.text.trim().is_empty());
    if fields.is_empty() {
        let why = format!("no text: {} missing or empty", quoted(&names.text));
        return Ok(Err(reject(Some(id), pos, why)));
    }
    let url = optional_str(dict, names.url)?;
    let first_seen = match optional_str(dict, names.first_seen)? {
        None => None,
        Some(t) => match Timestamp::parse_rfc3339(&t) {
            Ok(t) => Some(t),
            Err(e) => {
                let why = format!("field {:?}: {e}", names.first_seen);
                return Ok(Err(reject(Some(id), pos, why)));
            }
        },
    };
    Ok(Ok(record(id, url, first_seen, fields)))
}

/// A record as the package reads one: no host (boilerplate is not learned from Python
/// input) and no retention class.
pub(crate) fn record(
    id: String,
    url: Option<String>,
    first_seen: Option<Timestamp>,
    fields: Vec<TextField>,
) -> Record {
    Record {
        id,
        url,
        host: None,
        first_seen,
        retention_class: None,
        fields,
    }
}

pub(crate) fn optional_str(dict: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<String>> {
    match dict.get_item(name)? {
        Some(v) if !v.is_none() => match v.cast::<PyString>() {
            Ok(s) => Ok(Some(s.to_cow()?.into_owned())),
            Err(_) => Ok(Some(v.str()?.to_cow()?.into_owned())),
        },
        _ => Ok(None),
    }
}

/// Field names for a message: `"a", "b"`.
pub(crate) fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn reject(id: Option<String>, pos: usize, why: String) -> Rejected {
    Rejected { id, pos, why }
}

/// The items of one Arrow record batch, positions continuing from `items`.
pub(crate) fn read_batch(
    batch: &RecordBatch,
    names: &Names<'_>,
    items: &mut Vec<Item>,
) -> PyResult<()> {
    let column = |name: &str| -> Option<ArrayRef> { batch.column_by_name(name).cloned() };
    let ids = column(names.id);
    // The text columns the batch has (each named one must exist unless they are the
    // defaults, of which at least one must).
    let defaults = names.text.len() == DEFAULT_TEXT_FIELDS.len()
        && names
            .text
            .iter()
            .zip(DEFAULT_TEXT_FIELDS)
            .all(|(a, b)| a == b);
    let mut text_names = Vec::new();
    let mut texts = Vec::new();
    for n in &names.text {
        match column(n) {
            Some(c) => {
                check_strings(&c, n)?;
                text_names.push(n.clone());
                texts.push(c);
            }
            None if defaults => {}
            None => {
                return Err(PyValueError::new_err(format!(
                    "no column {n:?} (a text field); pass text=NAME"
                )))
            }
        }
    }
    if texts.is_empty() {
        return Err(PyValueError::new_err(format!(
            "no text column: none of {} (pass text=NAME)",
            quoted(&names.text)
        )));
    }
    let urls = column(names.url);
    let times = column(names.first_seen);
    if let Some(c) = &urls {
        check_strings(c, names.url)?;
    }
    if let Some(c) = &times {
        if !matches!(c.data_type(), DataType::Timestamp(..)) {
            check_strings(c, names.first_seen)?;
        }
    }
    let id_of = |i: usize| -> Option<String> {
        let ids = ids.as_ref()?;
        if ids.is_null(i) {
            return None;
        }
        Some(match ids.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                string_at(ids.as_ref(), i).to_owned()
            }
            _ => arrow_cast_display(ids, i),
        })
    };
    let base = items.len();
    for i in 0..batch.num_rows() {
        let pos = base + i;
        let Some(id) = id_of(i).filter(|s| !s.is_empty()) else {
            items.push((
                pos,
                Err(reject(
                    None,
                    pos,
                    format!("column {:?} is null or empty", names.id),
                )),
            ));
            continue;
        };
        let fields: Vec<TextField> = names
            .text
            .iter()
            .zip(&texts)
            .filter(|(_, c)| !c.is_null(i))
            .map(|(n, c)| TextField {
                name: n.clone(),
                text: string_at(c.as_ref(), i).to_owned(),
                weight: 1,
            })
            .collect();
        if fields.iter().all(|f| f.text.is_empty()) {
            let why = format!(
                "no text: column {:?} is null or empty",
                names.text.join("\", \"")
            );
            items.push((pos, Err(reject(Some(id), pos, why))));
            continue;
        }
        let text_of = |c: &Option<ArrayRef>| {
            c.as_ref()
                .filter(|c| !c.is_null(i))
                .map(|c| string_at(c.as_ref(), i).to_owned())
        };
        let first_seen = match times.as_ref().filter(|c| !c.is_null(i)) {
            None => None,
            Some(c) if matches!(c.data_type(), DataType::Timestamp(..)) => timestamp_at(c, i),
            Some(c) => match Timestamp::parse_rfc3339(string_at(c.as_ref(), i)) {
                Ok(t) => Some(t),
                Err(e) => {
                    let why = format!("column {:?}: {e}", names.first_seen);
                    items.push((pos, Err(reject(Some(id), pos, why))));
                    continue;
                }
            },
        };
        items.push((pos, Ok(record(id, text_of(&urls), first_seen, fields))));
    }
    Ok(())
}

/// An Arrow timestamp's value in milliseconds (Spark's `TimestampType` arrives as
/// microseconds in UTC).
fn timestamp_at(array: &ArrayRef, i: usize) -> Option<Timestamp> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{
        TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
        TimestampSecondType,
    };
    use arrow_schema::TimeUnit;
    let DataType::Timestamp(unit, _) = array.data_type() else {
        return None;
    };
    Some(Timestamp(match unit {
        TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(i) * 1000,
        TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().value(i),
        TimeUnit::Microsecond => array
            .as_primitive::<TimestampMicrosecondType>()
            .value(i)
            .div_euclid(1000),
        TimeUnit::Nanosecond => array
            .as_primitive::<TimestampNanosecondType>()
            .value(i)
            .div_euclid(1_000_000),
    }))
}

/// An integer id column's value as text.
pub(crate) fn arrow_cast_display(array: &ArrayRef, i: usize) -> String {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
    match array.data_type() {
        DataType::Int64 => array.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(i).to_string(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(i).to_string(),
        _ => String::new(),
    }
}

pub(crate) fn check_strings(c: &ArrayRef, name: &str) -> PyResult<()> {
    match c.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(()),
        other => Err(PyTypeError::new_err(format!(
            "column {name:?} is {other}, not strings"
        ))),
    }
}
