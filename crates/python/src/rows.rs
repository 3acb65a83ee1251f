//! `Deduper.process`'s results: the runner's sink, one row per record, and the Arrow table
//! made of them.

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder, UInt32Builder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_pyarrow::{IntoPyArrow, Table};
use arrow_schema::{DataType, Field, Schema};
use neardup::pipeline::Sink;
use neardup::{Decision, Outcome, Record};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::records::{Items, Rejected};

/// The outcomes as rows, in input order once sorted by position.
#[derive(Default)]
pub(crate) struct Rows {
    pub(crate) strict: bool,
    pub(crate) rows: Vec<Row>,
}

pub(crate) struct Row {
    pub(crate) pos: usize,
    pub(crate) id: Option<String>,
    pub(crate) decision: &'static str,
    pub(crate) survivor: Option<String>,
    pub(crate) matched: Option<String>,
    pub(crate) rule: Option<&'static str>,
    pub(crate) displaced: Option<String>,
    pub(crate) distance: Option<u32>,
    pub(crate) jaccard: Option<f64>,
    pub(crate) reason: Option<String>,
}

impl Row {
    /// A row with only its place, id and decision.
    fn new(pos: usize, id: Option<String>, decision: &'static str) -> Row {
        Row {
            pos,
            id,
            decision,
            survivor: None,
            matched: None,
            rule: None,
            displaced: None,
            distance: None,
            jaccard: None,
            reason: None,
        }
    }
}

/// A Python exception, or a library error to become one (the runner's errors are both).
pub(crate) struct Fail(PyErr);

impl From<neardup::Error> for Fail {
    fn from(e: neardup::Error) -> Self {
        Fail(crate::errors::to_py(e))
    }
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> Self {
        f.0
    }
}

impl Sink<Items> for Rows {
    type Error = Fail;

    fn rejected(&mut self, (pos, r): (usize, Rejected)) -> Result<(), Fail> {
        self.rows.push(Row {
            reason: Some(r.reason()),
            ..Row::new(pos, r.id, "rejected")
        });
        Ok(())
    }

    fn decided(&mut self, record: &Record, pos: usize, outcome: Outcome) -> Result<(), Fail> {
        let mut row = Row::new(pos, Some(record.id.clone()), "kept");
        match outcome.decision {
            Decision::Kept { displaced, .. } => {
                row.survivor = Some(record.id.clone());
                row.displaced = displaced;
            }
            Decision::Merged {
                survivor,
                matched,
                rule,
                scores,
            } => {
                row.decision = "merged";
                row.survivor = Some(survivor);
                row.matched = Some(matched);
                row.rule = Some(rule.as_str());
                row.distance = Some(scores.distance);
                row.jaccard = Some(scores.jaccard);
            }
            Decision::AlreadyStored { survivor } => {
                row.decision = "already_stored";
                row.survivor = Some(survivor);
            }
            Decision::Rejected { reason } => {
                if self.strict {
                    return Err(Fail(PyValueError::new_err(format!(
                        "records[{pos}] ({:?}): {reason}",
                        record.id
                    ))));
                }
                row.decision = "rejected";
                row.reason = Some(format!("records[{pos}]: {reason}"));
            }
        }
        self.rows.push(row);
        Ok(())
    }

    fn stops_at(&mut self, (_, r): &(usize, Rejected)) -> Option<Fail> {
        self.strict.then(|| Fail(PyValueError::new_err(r.reason())))
    }
}

impl Rows {
    pub(crate) fn into_table(mut self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        self.rows.sort_unstable_by_key(|r| r.pos);
        let n = self.rows.len();
        let mut pos = UInt64Builder::with_capacity(n);
        let mut id = StringBuilder::new();
        let mut decision = StringBuilder::new();
        let mut survivor = StringBuilder::new();
        let mut matched = StringBuilder::new();
        let mut rule = StringBuilder::new();
        let mut displaced = StringBuilder::new();
        let mut distance = UInt32Builder::with_capacity(n);
        let mut jaccard = Float64Builder::with_capacity(n);
        let mut reason = StringBuilder::new();
        for r in self.rows {
            pos.append_value(r.pos as u64);
            id.append_option(r.id);
            decision.append_value(r.decision);
            survivor.append_option(r.survivor);
            matched.append_option(r.matched);
            rule.append_option(r.rule);
            displaced.append_option(r.displaced);
            distance.append_option(r.distance);
            jaccard.append_option(r.jaccard);
            reason.append_option(r.reason);
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("position", DataType::UInt64, false),
            Field::new("id", DataType::Utf8, true),
            Field::new("decision", DataType::Utf8, false),
            Field::new("survivor", DataType::Utf8, true),
            Field::new("matched", DataType::Utf8, true),
            Field::new("rule", DataType::Utf8, true),
            Field::new("displaced", DataType::Utf8, true),
            Field::new("distance", DataType::UInt32, true),
            Field::new("jaccard", DataType::Float64, true),
            Field::new("reason", DataType::Utf8, true),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(pos.finish()),
            Arc::new(id.finish()),
            Arc::new(decision.finish()),
            Arc::new(survivor.finish()),
            Arc::new(matched.finish()),
            Arc::new(rule.finish()),
            Arc::new(displaced.finish()),
            Arc::new(distance.finish()),
            Arc::new(jaccard.finish()),
            Arc::new(reason.finish()),
        ];
        let batch = RecordBatch::try_new(schema.clone(), columns)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Table::try_new(vec![batch], schema)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?
            .into_pyarrow(py)
    }
}
