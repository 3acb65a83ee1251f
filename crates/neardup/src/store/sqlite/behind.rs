//! The commit thread of [`Store::commit_behind`]: the caller decides its next batch while
//! the store commits the last one.

use super::commit::commit_unless_moved;
use super::SqliteStore;
use crate::store::{Batch, Store};
use crate::{Error, Result};

/// The commit thread of [`Store::commit_behind`]: one batch at a time, each answered in
/// turn.
pub(super) struct Behind {
    batches: std::sync::mpsc::SyncSender<Batch>,
    answers: std::sync::mpsc::Receiver<Result<()>>,
    /// Whether a batch was handed over and its answer not taken yet.
    waiting: bool,
    thread: std::thread::JoinHandle<()>,
}

impl Behind {
    /// Lets the thread finish the batch it has, then stops it.
    pub(super) fn stop(self) {
        let Behind {
            batches,
            answers,
            thread,
            ..
        } = self;
        drop(batches);
        let _ = thread.join();
        drop(answers);
    }
}

impl SqliteStore {
    /// Takes the answer of the batch handed to the commit thread, if one is outstanding.
    pub(super) fn finish_behind(&mut self) -> Result<()> {
        let path = self.path.clone();
        match self.behind_mut() {
            Some(behind) if behind.waiting => {
                behind.waiting = false;
                behind.answers.recv().unwrap_or_else(|_| {
                    Err(Error::Store {
                        path,
                        reason: "the commit thread stopped".into(),
                    })
                })
            }
            _ => Ok(()),
        }
    }

    pub(super) fn behind_mut(&mut self) -> &mut Option<Behind> {
        self.behind.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    /// [`Store::commit_behind`]: starts the commit thread on the first call.
    pub(super) fn hand_behind(&mut self, batch: Batch) -> Result<()> {
        self.finish_behind()?;
        if self.locked {
            // A cycle under `lock` is in progress on this connection: commit in it.
            return self.commit(&batch);
        }
        if self.behind_mut().is_none() {
            let (batches, jobs) = std::sync::mpsc::sync_channel::<Batch>(1);
            let (answer, answers) = std::sync::mpsc::channel();
            let (conn, seen, path) = (self.conn.clone(), self.seen.clone(), self.path.clone());
            let thread = std::thread::Builder::new()
                .name("neardup-commit".into())
                .spawn(move || {
                    for batch in jobs {
                        let conn = conn.lock().unwrap_or_else(|e| e.into_inner());
                        let result = match commit_unless_moved(&conn, &seen, &batch) {
                            Ok(true) => Ok(()),
                            Ok(false) => Err(Error::Conflict),
                            Err(e) => Err(Error::Store {
                                path: path.clone(),
                                reason: e.to_string(),
                            }),
                        };
                        drop(conn);
                        if answer.send(result).is_err() {
                            break;
                        }
                    }
                })
                .map_err(|e| Error::Store {
                    path: self.path.clone(),
                    reason: format!("starting the commit thread: {e}"),
                })?;
            *self.behind_mut() = Some(Behind {
                batches,
                answers,
                waiting: false,
                thread,
            });
        }
        let path = self.path.clone();
        let behind = self.behind_mut().as_mut().expect("started above");
        behind.batches.send(batch).map_err(|_| Error::Store {
            path,
            reason: "the commit thread stopped".into(),
        })?;
        behind.waiting = true;
        Ok(())
    }
}
