//! `dedup`'s outputs: rejects, merges, clusters and kept.jsonl (spooled during the run,
//! rendered at the end from the input as read), and the run's counts.

use super::*;

/// A record's JSON object for kept.jsonl: its line as read, or the line's members but those
/// whose keys kept.jsonl sets.
pub(super) enum SpoolObject {
    AsRead(input::LineBytes),
    Members(input::LineBytes, Vec<std::ops::Range<usize>>),
}

impl SpoolObject {
    /// The object (valid, as read) for kept.jsonl: kept as read, only trimmed, unless it has
    /// members kept.jsonl sets (see [`input::Record::kept_members`]); then only its other
    /// members.
    pub(super) fn new(
        object: input::LineBytes,
        kept_members: Option<Vec<std::ops::Range<usize>>>,
    ) -> Self {
        match kept_members {
            None => SpoolObject::AsRead(object.trimmed()),
            Some(kept) => SpoolObject::Members(object, kept),
        }
    }
}

/// Counts for the report.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) input: u64,
    pub(super) new: u64,
    pub(super) too_short: u64,
    pub(super) exact: u64,
    pub(super) near: u64,
    pub(super) short_near: u64,
    /// Merged by the semantic stage.
    pub(super) semantic: u64,
    pub(super) displaced_survivor: u64,
    /// Clusters a record bridged fused with its own (their survivors merged).
    pub(super) fused: u64,
    pub(super) already_stored: u64,
    /// Records whose id an earlier record of this input has (rejected).
    pub(super) duplicate_ids: u64,
    pub(super) rejected: u64,
    pub(super) text_bytes: u64,
    pub(super) verify_rejections: u64,
    /// With `--features code`: records that did not parse and were read as words.
    pub(super) code_fallbacks: u64,
}

impl Counts {
    pub(super) fn count(&mut self, rule: MergeRule) {
        match rule {
            MergeRule::Exact => self.exact += 1,
            MergeRule::SimhashJaccard => self.near += 1,
            MergeRule::CharsJaccard => self.short_near += 1,
            MergeRule::SimhashSemantic => self.semantic += 1,
        }
    }
}

pub(super) struct HostShare {
    pub(super) shingles: u64,
    pub(super) removed: u64,
}

/// A survivor's kept.jsonl line: its object as read, up to before the closing brace
/// (`body` of `source`), followed by `tail` (the cluster's keys and the closing brace).
pub(super) struct KeptLine {
    pub(super) id: String,
    pub(super) source: Source,
    pub(super) body: Body,
    pub(super) tail: Vec<u8>,
}

/// What a kept line's object is, in its source.
pub(super) enum Body {
    /// The object up to its closing brace.
    Whole(std::ops::Range<usize>),
    /// An opening brace, then these members.
    Members(Vec<std::ops::Range<usize>>),
}

impl Body {
    pub(super) fn write(&self, source: &[u8], out: &mut impl Write) -> std::io::Result<()> {
        match self {
            Body::Whole(range) => out.write_all(&source[range.clone()]),
            Body::Members(members) => {
                out.write_all(b"{")?;
                for (i, member) in members.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    out.write_all(&source[member.clone()])?;
                }
                Ok(())
            }
        }
    }

    /// Where in its source it ends.
    pub(super) fn end(&self) -> usize {
        match self {
            Body::Whole(range) => range.end,
            Body::Members(members) => members.iter().map(|m| m.end).max().unwrap_or(0),
        }
    }
}

/// Where a kept line's object is: in the spool line, or in a mapped input file.
#[derive(Clone, Copy)]
pub(super) enum Source {
    Spool,
    Mapped(usize),
}

/// The mapped input files spooled objects refer to (`@map:start:end` in the spool, instead
/// of a copy of the object): a 1 GB run spooled 700 MB of objects, copied from the input into
/// the spool, through the page cache and back.
#[derive(Default)]
pub(super) struct SpoolMaps {
    pub(super) maps: Vec<Arc<memmap2::Mmap>>,
    pub(super) by_address: HashMap<usize, usize>,
    /// Per map, the end of what kept.jsonl has been written from: pages before it are
    /// unmapped again, so the run does not end with its kept objects resident.
    pub(super) released: Vec<usize>,
}

impl SpoolMaps {
    pub(super) fn index_of(&mut self, map: &Arc<memmap2::Mmap>) -> usize {
        let address = Arc::as_ptr(map) as usize;
        *self.by_address.entry(address).or_insert_with(|| {
            self.maps.push(map.clone());
            self.released.push(0);
            self.maps.len() - 1
        })
    }

    /// The map and the members `map[start..end]`, ... named by a spooled
    /// `&map:start:end:start:end...`.
    pub(super) fn resolve_members(
        &self,
        reference: &str,
    ) -> anyhow::Result<(usize, Vec<std::ops::Range<usize>>)> {
        let bad = || anyhow::anyhow!("a bad object reference {reference:?}");
        let numbers = reference
            .split(':')
            .map(str::parse::<usize>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| bad())?;
        let (&map, offsets) = numbers.split_first().ok_or_else(bad)?;
        let len = self.maps.get(map).ok_or_else(bad)?.len();
        if offsets.len() % 2 != 0 {
            return Err(bad());
        }
        let members: Vec<std::ops::Range<usize>> =
            offsets.chunks_exact(2).map(|p| p[0]..p[1]).collect();
        if members.iter().any(|m| m.start > m.end || m.end > len) {
            bail!("an object reference out of range {reference:?}");
        }
        Ok((map, members))
    }

    /// The map, start and bytes `map[start..end]` named by a spooled `@map:start:end`.
    pub(super) fn resolve(&self, reference: &str) -> anyhow::Result<(usize, usize, &[u8])> {
        let mut parts = reference.split(':').map(str::parse::<usize>);
        let (Some(Ok(map)), Some(Ok(start)), Some(Ok(end)), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            bail!("a bad object reference {reference:?}");
        };
        let bytes = self
            .maps
            .get(map)
            .and_then(|m| m.get(start..end))
            .with_context(|| format!("an object reference out of range {reference:?}"))?;
        Ok((map, start, bytes))
    }
}

/// A spooled record's kept.jsonl line, when it survives: its object with the cluster's keys
/// added. The object itself is not copied: the caller writes it from the spool's line.
pub(super) fn render_kept(
    line: &str,
    maps: &SpoolMaps,
    deduper: &Deduper<Box<dyn Store>>,
) -> anyhow::Result<Option<KeptLine>> {
    let mut parts = line.splitn(4, '\t');
    let (Some(id), Some(origin), Some(language), Some(object)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        bail!("a line has fewer than 4 fields");
    };
    let id: String = serde_json::from_str(id)?;
    // Only survivors are written: the cheap check first, the cluster's view after.
    if deduper
        .survivor_of(&id)
        .is_none_or(|(survivor, _)| survivor != id)
    {
        return Ok(None);
    }
    let Some(cluster) = deduper.cluster_of(&id) else {
        return Ok(None);
    };
    let mut tail = Vec::with_capacity(256);
    let (source, body) = if object == "null" {
        write!(
            tail,
            "{{\"id\":{},\"source\":{origin},",
            serde_json::to_string(&id)?
        )?;
        (Source::Spool, Body::Whole(0..0))
    } else if let Some(reference) = object.strip_prefix('&') {
        // The members of an object kept.jsonl sets some keys of, then ours.
        let (map, members) = maps.resolve_members(reference)?;
        if !members.is_empty() {
            tail.push(b',');
        }
        (Source::Mapped(map), Body::Members(members))
    } else {
        // The object as read (its own copies of the added keys were removed before it was
        // spooled): up to its closing brace, then ours.
        let (source, start, bytes) = match object.strip_prefix('@') {
            Some(reference) => {
                let (map, start, bytes) = maps.resolve(reference)?;
                (Source::Mapped(map), start, bytes)
            }
            None => (Source::Spool, line.len() - object.len(), object.as_bytes()),
        };
        let (body, has_members) =
            neardup::json::open_object(bytes).context("a spooled object is not a JSON object")?;
        if has_members {
            tail.push(b',');
        }
        (source, Body::Whole(start..start + body.len()))
    };
    neardup::json::write_kept_fields(
        &mut tail,
        &cluster.source_urls,
        &cluster.first_seen.to_rfc3339(),
        cluster.members.len(),
        deduper.fingerprint_of(&id).as_deref(),
        (language != "null").then_some(language),
    )?;
    tail.extend_from_slice(b"}\n");
    Ok(Some(KeptLine {
        id,
        source,
        body,
        tail,
    }))
}

/// The survivors' kept.jsonl lines of a chunk of spool lines, rendered in parallel (`None`
/// for a line whose record does not survive).
pub(super) fn render_kept_chunk(
    chunk: &[input::LineBytes],
    maps: &SpoolMaps,
    deduper: &Deduper<Box<dyn Store>>,
) -> anyhow::Result<Vec<Option<KeptLine>>> {
    chunk
        .par_iter()
        .map(|line| render_kept(simdutf8::basic::from_utf8(line)?, maps, deduper))
        .collect()
}

/// Writes a rendered chunk's lines in order (each id once) and returns how many it wrote.
pub(super) fn write_kept_chunk(
    chunk: &[input::LineBytes],
    rendered: Vec<Option<KeptLine>>,
    maps: &SpoolMaps,
    released: &mut [usize],
    out: &mut impl Write,
    written: &mut HashSet<String>,
) -> anyhow::Result<u64> {
    let mut kept = 0;
    let mut read_upto = released.to_vec();
    for (line, k) in chunk.iter().zip(rendered) {
        let Some(k) = k else { continue };
        if written.insert(k.id) {
            match k.source {
                Source::Spool => k.body.write(line, out)?,
                Source::Mapped(map) => {
                    read_upto[map] = read_upto[map].max(k.body.end());
                    k.body.write(&maps.maps[map], out)?;
                }
            }
            out.write_all(&k.tail)?;
            kept += 1;
        }
    }
    // Nothing borrows the objects written: their pages can go (a later reference to them,
    // if any, reads them from the page cache again).
    for (m, upto) in read_upto.into_iter().enumerate() {
        if upto > released[m] {
            input::release_pages(&maps.maps[m], released[m]..upto);
            released[m] = upto;
        }
    }
    Ok(kept)
}

/// Spool lines rendered together (in parallel) into kept.jsonl lines. Rendering runs a
/// chunk or two ahead of the writer, and what it reads of the input stays mapped until
/// written: chunks of 8,192 lines raised the 1 GB bench run's RSS by 280 MB.
pub(super) const KEPT_CHUNK: usize = 2048;
/// kept.jsonl's block buffer: each direct write of it waits for the disk (about 4 ms at
/// 2 GB/s) while the next chunk renders.
pub(super) const KEPT_BUFFER: usize = 8 << 20;

/// Buffer of each output file: records are kilobytes long, so an 8 KiB buffer would write
/// nearly every record with a system call of its own.
pub(super) const OUTPUT_BUFFER: usize = 1 << 20;

/// The output files.
pub(super) struct Outputs {
    pub(super) dir: PathBuf,
    pub(super) merges: BufWriter<File>,
    pub(super) rejects: BufWriter<File>,
    /// pairs.jsonl, with --pairs.
    pub(super) pairs: Option<BufWriter<File>>,
    /// alerts.jsonl, with --watchlist.
    pub(super) alerts: Option<BufWriter<File>>,
    pub(super) spool: BufWriter<File>,
}

impl Outputs {
    pub(super) fn create(dir: &Path, pairs: bool, alerts: bool) -> anyhow::Result<Outputs> {
        let open = |name: &str| -> anyhow::Result<BufWriter<File>> {
            let path = dir.join(name);
            Ok(BufWriter::with_capacity(
                OUTPUT_BUFFER,
                File::create(&path).with_context(|| format!("creating {}", path.display()))?,
            ))
        };
        // An optional output: created when asked for, else an earlier run's removed, so
        // that nothing stale lies beside this run's outputs.
        let optional = |name: &str, wanted: bool| -> anyhow::Result<Option<BufWriter<File>>> {
            if wanted {
                return Ok(Some(open(name)?));
            }
            match std::fs::remove_file(dir.join(name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("removing an old {name}"))
                }
                _ => Ok(None),
            }
        };
        Ok(Outputs {
            dir: dir.to_owned(),
            merges: open("merges.jsonl")?,
            rejects: open("rejects.jsonl")?,
            pairs: optional("pairs.jsonl", pairs)?,
            alerts: optional("alerts.jsonl", alerts)?,
            spool: open(".kept.spool")?,
        })
    }

    pub(super) fn merge(&mut self, e: &MergeLogEntry) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.merges, e)?;
        self.merges.write_all(b"\n")?;
        Ok(())
    }

    pub(super) fn finish(&mut self, report: &Value) -> anyhow::Result<()> {
        self.merges.flush()?;
        self.rejects.flush()?;
        for optional in [&mut self.pairs, &mut self.alerts].into_iter().flatten() {
            optional.flush()?;
        }
        let path = self.dir.join("report.json");
        std::fs::write(&path, serde_json::to_string_pretty(report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        let _ = std::fs::remove_file(self.dir.join(".kept.spool"));
        Ok(())
    }
}

pub(super) struct RunState {
    pub(super) out: Outputs,
    /// Records that raised an alert, by their most severe level.
    pub(super) alerted: BTreeMap<String, u64>,
    /// `--strict`: a record rejected by its decision (a duplicate id, say) ends the run.
    pub(super) strict: bool,
    pub(super) counts: Counts,
    /// Ids of this run's records that were accepted (not rejected), in order.
    pub(super) run_ids: Vec<String>,
    /// Where each of them came from (`file:line`), by the hash of its id: a later record
    /// of the input with the same id is rejected, naming it.
    pub(super) run_origins: HashMap<u128, Box<str>>,
    /// The hashes of the merged ids of merges.jsonl's entries so far.
    pub(super) merge_logged: HashSet<u128>,
    pub(super) hosts: BTreeMap<String, HostShare>,
    /// The mapped inputs the spool refers to.
    pub(super) maps: SpoolMaps,
    pub(super) progress: ProgressBar,
}

impl RunState {
    pub(super) fn reject(
        &mut self,
        origin: &str,
        id: Option<&str>,
        reason: &str,
    ) -> anyhow::Result<()> {
        self.counts.rejected += 1;
        let (file, line) = match origin.rsplit_once(':') {
            Some((f, l)) if l.parse::<u64>().is_ok() => (f.to_owned(), l.parse::<u64>().ok()),
            _ => (origin.to_owned(), None),
        };
        serde_json::to_writer(
            &mut self.out.rejects,
            &json!({"file": file, "line": line, "id": id, "reason": reason}),
        )?;
        self.out.rejects.write_all(b"\n")?;
        if self.strict {
            self.out.rejects.flush()?;
            bail!("{origin}: {reason} (--strict)");
        }
        Ok(())
    }

    /// Remembers a kept record for kept.jsonl: its id, origin and language as JSON strings
    /// and its object as serialised, tab-separated (serialised JSON holds no raw tab).
    pub(super) fn spool(
        &mut self,
        id: &str,
        object: Option<SpoolObject>,
        origin: &str,
        language: Option<&str>,
    ) -> anyhow::Result<()> {
        let w = &mut self.out.spool;
        serde_json::to_writer(&mut *w, id)?;
        w.write_all(b"\t")?;
        serde_json::to_writer(&mut *w, origin)?;
        w.write_all(b"\t")?;
        serde_json::to_writer(&mut *w, &language)?;
        w.write_all(b"\t")?;
        match &object {
            Some(SpoolObject::AsRead(line)) => match line.mapped() {
                // A reference, not a copy: the object is read from the input at the end.
                Some((map, range)) => write!(
                    w,
                    "@{}:{}:{}",
                    self.maps.index_of(map),
                    range.start,
                    range.end
                )?,
                None => w.write_all(line)?,
            },
            Some(SpoolObject::Members(line, kept)) => match line.mapped() {
                // References to the members kept, as to a whole object.
                Some((map, range)) => {
                    write!(w, "&{}", self.maps.index_of(map))?;
                    for member in kept {
                        let (start, end) = (range.start + member.start, range.start + member.end);
                        write!(w, ":{start}:{end}")?;
                    }
                }
                None => w.write_all(&input::object_with(line, kept))?,
            },
            None => w.write_all(b"null")?,
        }
        w.write_all(b"\n")?;
        Ok(())
    }

    /// Writes a record's watchlist alerts to alerts.jsonl (one line per record that raised
    /// any, most severe first).
    pub(super) fn alerts(
        &mut self,
        record: &Record,
        origin: &str,
        alerts: Vec<neardup::watch::Alert>,
    ) -> anyhow::Result<()> {
        let (Some(out), Some(top)) = (&mut self.out.alerts, alerts.first()) else {
            return Ok(());
        };
        *self.alerted.entry(top.level.clone()).or_default() += 1;
        serde_json::to_writer(
            &mut *out,
            &json!({"id": record.id, "origin": origin, "level": top.level, "alerts": alerts}),
        )?;
        out.write_all(b"\n")?;
        Ok(())
    }

    pub(super) fn record_outcome(
        &mut self,
        record: &Record,
        object: Option<SpoolObject>,
        origin: &str,
        outcome: neardup::Outcome,
    ) -> anyhow::Result<()> {
        if let Some(host) = &outcome.host {
            let s = self.hosts.entry(host.clone()).or_insert(HostShare {
                shingles: 0,
                removed: 0,
            });
            s.shingles += outcome.shingles as u64;
            s.removed += outcome.boilerplate_removed as u64;
        }
        if let Some(first) = self.run_origins.get(&id_hash(&record.id)) {
            // The same id again in this input: the first record stands, this one is
            // rejected (a rerun's records, stored by an earlier run, are not in the map).
            let reason = match &outcome.decision {
                Decision::AlreadyStored { .. } => Some(format!(
                    "duplicate id {:?}: the same record as {first} (an id is used once per input; the first is kept as decided)",
                    record.id
                )),
                Decision::Rejected { reason } if reason.starts_with("duplicate id") => {
                    Some(format!(
                        "duplicate id with different text: {:?} was first used by {first} (ids must be unique; the first record is kept as it was)",
                        record.id
                    ))
                }
                _ => None,
            };
            if let Some(reason) = reason {
                self.counts.duplicate_ids += 1;
                return self.reject(origin, Some(&record.id), &reason);
            }
        }
        for m in &outcome.merges {
            self.log_merge(m)?;
        }
        if let Some(out) = &mut self.out.pairs {
            for p in &outcome.pairs {
                let mut pair = json!({"a": record.id, "b": p.other, "distance": p.scores.distance,
                            "jaccard": p.scores.jaccard, "rule": p.rule.as_str()});
                if let Some(c) = p.scores.cosine {
                    pair["cosine"] = json!(c);
                }
                serde_json::to_writer(&mut *out, &pair)?;
                out.write_all(b"\n")?;
            }
        }
        self.counts.fused += outcome.fused as u64;
        self.counts.code_fallbacks += u64::from(outcome.code_fallback);
        match outcome.decision {
            Decision::Rejected { reason } => {
                return self.reject(origin, Some(&record.id), &reason);
            }
            Decision::Kept {
                too_short,
                displaced,
                joined,
            } => {
                match (joined, displaced) {
                    (Some((rule, _, _)), Some(_)) => {
                        self.counts.displaced_survivor += 1;
                        self.counts.count(rule);
                    }
                    _ if too_short => self.counts.too_short += 1,
                    _ => self.counts.new += 1,
                }
                self.spool(&record.id, object, origin, outcome.language.as_deref())?;
            }
            Decision::Merged { rule, .. } => self.counts.count(rule),
            Decision::AlreadyStored { survivor } => {
                self.counts.already_stored += 1;
                // A merged one's entry comes from the store's merge log at the end.
                if survivor == record.id {
                    self.spool(&record.id, object, origin, outcome.language.as_deref())?;
                }
            }
        }
        self.run_origins.insert(id_hash(&record.id), origin.into());
        self.run_ids.push(record.id.clone());
        Ok(())
    }

    /// Writes a merge-log entry to merges.jsonl.
    pub(super) fn log_merge(&mut self, e: &MergeLogEntry) -> anyhow::Result<()> {
        self.merge_logged.insert(id_hash(&e.merged));
        self.out.merge(e)
    }

    /// Writes kept.jsonl (this run's records that survive) and clusters.jsonl (clusters of
    /// two or more touched by this run); returns (kept, merged) counts of this run's records
    /// and the ids of its merged records that merges.jsonl has no entry for yet.
    pub(super) fn write_kept_and_clusters(
        &mut self,
        deduper: &Deduper<Box<dyn Store>>,
    ) -> anyhow::Result<(u64, u64, Vec<String>)> {
        self.out.spool.flush()?;
        let dir = self.out.dir.clone();
        let kept_path = dir.join("kept.jsonl");
        let mut kept_out = UncachedFile::create(&kept_path, KEPT_BUFFER)
            .with_context(|| format!("creating {}", kept_path.display()))?;
        // Two stages: this thread reads the spool and renders its lines chunk by chunk, in
        // parallel; a writer thread writes the rendered chunks in spool order meanwhile.
        let mut maps = std::mem::take(&mut self.maps);
        let mut released = std::mem::take(&mut maps.released);
        let maps = &maps;
        let run_ids = &self.run_ids;
        let logged = &self.merge_logged;
        let (kept, merged) =
            std::thread::scope(|scope| -> anyhow::Result<(u64, (u64, Vec<String>))> {
                // clusters.jsonl needs only the deduper: it is written meanwhile, on a thread of
                // its own (kept.jsonl's writer spends its time in the kernel, copying).
                let clusters = scope.spawn(|| write_clusters(&dir, run_ids, logged, deduper));
                type Rendered = (Vec<input::LineBytes>, Vec<Option<KeptLine>>);
                let (tx, rx) = std::sync::mpsc::sync_channel::<Rendered>(1);
                let kept_out = &mut kept_out;
                let writer = scope.spawn(move || -> anyhow::Result<u64> {
                    let mut kept = 0u64;
                    let mut written: HashSet<String> = HashSet::new();
                    for (chunk, rendered) in rx {
                        kept += write_kept_chunk(
                            &chunk,
                            rendered,
                            maps,
                            &mut released,
                            kept_out,
                            &mut written,
                        )?;
                    }
                    Ok(kept)
                });
                let mut chunk = Vec::with_capacity(KEPT_CHUNK);
                let read = input::for_each_line(&dir.join(".kept.spool"), |line| {
                    chunk.push(line);
                    if chunk.len() == KEPT_CHUNK {
                        let rendered = render_kept_chunk(&chunk, maps, deduper)?;
                        let full = std::mem::replace(&mut chunk, Vec::with_capacity(KEPT_CHUNK));
                        // A closed channel means the writer failed: its error is reported below.
                        if tx.send((full, rendered)).is_err() {
                            bail!("the writer stopped");
                        }
                    }
                    Ok(())
                })
                .and_then(|()| {
                    let rendered = render_kept_chunk(&chunk, maps, deduper)?;
                    if tx.send((std::mem::take(&mut chunk), rendered)).is_err() {
                        bail!("the writer stopped");
                    }
                    Ok(())
                });
                drop(tx);
                let kept = writer
                    .join()
                    .expect("the kept.jsonl writer does not panic")
                    .with_context(|| format!("writing {} from its spool", kept_path.display()))?;
                read.with_context(|| format!("writing {} from its spool", kept_path.display()))?;
                let merged = clusters
                    .join()
                    .expect("the clusters.jsonl writer does not panic")
                    .with_context(|| format!("writing {}", dir.join("clusters.jsonl").display()))?;
                Ok((kept, merged))
            })?;
        kept_out
            .flush()
            .with_context(|| format!("writing {}", kept_path.display()))?;
        let (merged, unlogged) = merged;
        Ok((kept, merged, unlogged))
    }
}

/// Writes clusters.jsonl: one line per cluster of two or more that this run's records are
/// in, in the order of their first record; answers how many of the run's records were merged,
/// and which of them have no entry in merges.jsonl yet (`logged`: the hashes of those that do).
pub(super) fn write_clusters(
    dir: &Path,
    run_ids: &[String],
    logged: &HashSet<u128>,
    deduper: &Deduper<Box<dyn Store>>,
) -> anyhow::Result<(u64, Vec<String>)> {
    let mut clusters_out =
        BufWriter::with_capacity(OUTPUT_BUFFER, File::create(dir.join("clusters.jsonl"))?);
    let mut seen: HashSet<&str> = HashSet::new();
    let mut order: Vec<&str> = Vec::new();
    let mut merged = 0u64;
    let mut unlogged = Vec::new();
    // Each run record's survivor (cheap), then one view per cluster of two or more.
    for id in run_ids {
        let Some((survivor, size)) = deduper.survivor_of(id) else {
            continue;
        };
        if survivor != id {
            merged += 1;
            if !logged.contains(&id_hash(id)) {
                unlogged.push(id.clone());
            }
        }
        if size >= 2 && seen.insert(survivor) {
            order.push(survivor);
        }
    }
    let views: Vec<Option<neardup::pipeline::ClusterView>> =
        order.par_iter().map(|s| deduper.cluster_of(s)).collect();
    for (n, c) in views.iter().flatten().enumerate() {
        serde_json::to_writer(
            &mut clusters_out,
            &json!({"cluster": n + 1, "survivor": c.survivor, "members": c.members,
                    "source_urls": c.source_urls, "first_seen": c.first_seen.to_rfc3339()}),
        )?;
        clusters_out.write_all(b"\n")?;
    }
    clusters_out.flush()?;
    Ok((merged, unlogged))
}

/// What a record's id is known by in this run's sets: 128 bits of hash, not the string.
pub(super) fn id_hash(id: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(id.as_bytes())
}
