//! The service's watchlist: every inserted and queried record is checked against it, and
//! its answer carries the alerts (`--watchlist`).

use std::time::{Duration, Instant};

use neardup::watch::Alert;
use neardup::Record;
use parking_lot::{Mutex, RwLock};

use super::api::{Answer, ApiError};
use super::App;
use crate::cmd::watch::Opened;

/// How often the watchlist picks up what `neardup watch add`, `erase` and `expire` wrote
/// to it since: at most this long after they finish, records checked see their changes.
const REFRESH_EVERY: Duration = Duration::from_secs(1);

pub struct Watch {
    list: RwLock<Opened>,
    refreshed: Mutex<Instant>,
}

impl Watch {
    pub fn new(list: Opened) -> Watch {
        Watch {
            list: RwLock::new(list),
            refreshed: Mutex::new(Instant::now()),
        }
    }

    pub fn levels(&self) -> Vec<String> {
        self.list
            .read()
            .bands()
            .levels()
            .map(str::to_owned)
            .collect()
    }

    /// Each record's alerts.
    fn check(&self, records: &[Record]) -> Result<Vec<Vec<Alert>>, ApiError> {
        let due = {
            let mut refreshed = self.refreshed.lock();
            let due = refreshed.elapsed() >= REFRESH_EVERY;
            if due {
                *refreshed = Instant::now();
            }
            due
        };
        if due {
            self.list
                .write()
                .refresh()
                .map_err(|e| ApiError::internal(format!("refreshing the watchlist: {e}")))?;
        }
        let list = self.list.read();
        records
            .iter()
            .map(|r| {
                list.check(r).map_err(|e| {
                    ApiError::internal(format!(
                        "checking record {:?} against the watchlist: {e}",
                        r.id
                    ))
                })
            })
            .collect()
    }
}

/// The records' alerts when the service has a watchlist, checked on the blocking pool.
pub async fn alerts_of(
    app: &App,
    records: Vec<Record>,
) -> Result<(Vec<Record>, Option<Vec<Vec<Alert>>>), ApiError> {
    let Some(watch) = app.watch.clone() else {
        return Ok((records, None));
    };
    tokio::task::spawn_blocking(move || {
        let alerts = watch.check(&records);
        alerts.map(|a| (records, Some(a)))
    })
    .await
    .map_err(|e| ApiError::internal(format!("watchlist check failed: {e}")))?
}

/// Puts each record's alerts in its answer and counts them.
pub fn attach(app: &App, answers: &mut [Answer], alerts: Option<Vec<Vec<Alert>>>) {
    let Some(alerts) = alerts else {
        return;
    };
    for (answer, alerts) in answers.iter_mut().zip(alerts) {
        if let Some(top) = alerts.first() {
            app.metrics.alerted(&top.level);
        }
        answer.alerts = Some(alerts);
    }
}
