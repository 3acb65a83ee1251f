"""`python -m neardup.spark dedup --input PATH --output DIR`: the CLI's dedup on Spark.

A local master by default (`--master` for another); under `spark-submit`, the master it
gives: `spark-submit --master yarn "$(python -m neardup.spark script)" dedup ...` (this
file, which imports nothing relative, so Spark can run it as a script). Exit codes as `neardup dedup`'s: 0 done, 2 done with rejects, 3 error (bad
arguments, unreadable input, a refused profile), 4 accounting error."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

EXIT_DONE, EXIT_REJECTS, EXIT_ERROR, EXIT_ACCOUNTING = 0, 2, 3, 4

JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m neardup.spark",
        description="Deduplicate a corpus on Apache Spark with neardup's fingerprints, "
        "candidates, Jaccard verification and survivors.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("script", help="print this program's path, for spark-submit")
    d = sub.add_parser("dedup", help="deduplicate records (the CLI's `neardup dedup`)")
    d.add_argument("--input", required=True, nargs="+", metavar="PATH",
                   help="JSON Lines files (.jsonl, .ndjson, .json, also .gz) or Parquet "
                   "files or directories; any URL Spark reads (hdfs://, s3a://, ...)")
    d.add_argument("--output", required=True, metavar="DIR",
                   help="directory for kept/, clusters/, merges/, rejects/, state/ (and boilerplate/) and report.json")
    d.add_argument("--format", choices=["auto", "jsonl", "parquet"], default="auto",
                   help="input format (default: by the first input's name; directories are Parquet)")
    d.add_argument("--output-format", choices=["jsonl", "parquet"], default=None,
                   help="output format (default: the input's)")
    d.add_argument("--master", default=None,
                   help="Spark master (default: spark-submit's, else local[*])")
    d.add_argument("--previous", metavar="DIR", default=None,
                   help="a previous run's output directory: deduplicate against its state too")
    d.add_argument("--pairs", action="store_true", help="also write pairs/: every verified pair")
    d.add_argument("--id-field", default="id")
    d.add_argument("--text-field", action="append", default=None,
                   help="text field, repeatable (default: title, description, body_text, text)")
    d.add_argument("--url-field", default="url")
    d.add_argument("--time-field", default="first_seen")
    d.add_argument("--max-distance", type=int, default=16)
    d.add_argument("--min-jaccard", type=float, default=None, help="default 0.8, 0.7 with code tokens")
    d.add_argument("--profile", default="xxh3", choices=["xxh3", "blake2b"])
    d.add_argument("--shingle-width", type=int, default=4)
    d.add_argument("--bits", type=int, default=64, choices=[64, 128])
    d.add_argument("--weighting", default="tf", choices=["tf", "presence", "idf"])
    d.add_argument("--idf", default=None)
    d.add_argument("--tokens", default="words", choices=["words", "jieba", "chars"])
    d.add_argument("--features", default="words", choices=["words", "code"],
                   help="code: source code read as its syntax tree (needs --code-lang)")
    d.add_argument("--code-lang", default=None, metavar="LANG",
                   help="with --features code: rust, python, javascript, typescript, tsx, c, cpp, "
                        "java, go, or auto (each record's language by its id's file extension)")
    d.add_argument("--synonyms", default=None, metavar="FILE",
                   help="word groups, one a line, that count as one word (a path every executor reads)")
    d.add_argument("--stopwords", action="store_true")
    d.add_argument("--no-language", action="store_true")
    d.add_argument("--boilerplate", action="store_true",
                   help="learn each host's boilerplate in a first pass and leave it out of "
                   "every record (off by default, as in the CLI: it costs recall where true "
                   "pairs share a template); a previous run's applies either way")
    d.add_argument("--boilerplate-share", type=float, default=0.05,
                   help="a shingle on more than this share of a host's pages is boilerplate")
    d.add_argument("--boilerplate-min-pages", type=int, default=20,
                   help="only hosts with at least this many pages learn boilerplate")
    d.add_argument("--boilerplate-min-count", type=int, default=10,
                   help="... and a boilerplate shingle is on at least this many of them")
    d.add_argument("--max-bucket", type=int, default=50_000,
                   help="pigeonhole groups larger than this are tiled (see report.json's skew); "
                   "with --verify tiles, the most records a tile holds")
    d.add_argument("--verify", choices=["auto", "groups", "join", "tiles"], default="auto",
                   help="verify candidates inside their pigeonhole group (a record's set "
                   "shuffled once, and again for each group it has candidates in), by "
                   "joining pairs to sets (two per candidate), or compare every pair once "
                   "in tiles (each set shuffled once per tile); auto: tiles where the "
                   "blocks are narrow (k over about a fifth of the bits), else groups")
    d.add_argument("--shuffle-partitions", type=int, default=None,
                   help="spark.sql.shuffle.partitions (default: Spark's, coalesced adaptively)")
    d.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    return p


def _tokens(args) -> str:
    """The token rule of `--features`, `--code-lang` and `--tokens`, checked as the CLI
    checks them."""
    if args.features == "code":
        if args.code_lang is None:
            raise ValueError("--features code needs --code-lang (rust, python, javascript, "
                             "typescript, tsx, c, cpp, java, go, or auto)")
        if args.tokens != "words":
            raise ValueError("--tokens applies to --features words; code is read as its syntax tree")
        return "code-" + args.code_lang
    if args.code_lang is not None:
        raise ValueError("--code-lang applies to --features code")
    return args.tokens


def _input_format(paths: List[str], given: str) -> str:
    if given != "auto":
        return given
    first = paths[0].rstrip("/")
    name = first[:-3] if first.endswith(".gz") else first
    return "jsonl" if name.endswith(JSON_SUFFIXES) else "parquet"


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "script":
        print(os.path.abspath(__file__))
        return EXIT_DONE
    # Imported here, so that `--help` answers without starting a JVM.
    import neardup

    from neardup.spark import AccountingError, Options, dedup
    from neardup.spark._session import session

    try:
        options = Options(
            id=args.id_field,
            text=args.text_field,
            url=args.url_field,
            first_seen=args.time_field,
            max_distance=args.max_distance,
            min_jaccard=args.min_jaccard,
            profile=args.profile,
            shingle=args.shingle_width,
            bits=args.bits,
            weighting=args.weighting,
            idf=args.idf,
            tokens=_tokens(args),
            stopwords=args.stopwords,
            synonyms=args.synonyms,
            detect_language=not args.no_language,
            max_bucket=args.max_bucket,
            verify=args.verify,
            boilerplate=args.boilerplate,
            boilerplate_share=args.boilerplate_share,
            boilerplate_min_pages=args.boilerplate_min_pages,
            boilerplate_min_count=args.boilerplate_min_count,
        )
    except (ValueError, TypeError, neardup.NeardupError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    local = [p for p in args.input if "://" not in p]
    missing = [p for p in local if not os.path.exists(p)]
    if missing:
        print(f"error: no such input: {missing[0]}", file=sys.stderr)
        return EXIT_ERROR
    spark = session(args.master, args.shuffle_partitions)
    fmt = _input_format(args.input, args.format)
    try:
        if fmt == "jsonl":
            df = spark.read.text(args.input)
            result = dedup(df, json="value", previous=_state(args.previous), options=options)
        else:
            df = spark.read.parquet(*args.input)
            result = dedup(df, previous=_state(args.previous), options=options)
        result.write(args.output, format=args.output_format or fmt, pairs=args.pairs)
    except AccountingError as e:
        print(f"accounting error: {e}", file=sys.stderr)
        return EXIT_ACCOUNTING
    except (ValueError, TypeError, neardup.NeardupError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # Spark's own (an unreadable input, a failed task): named, exit 3.
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        spark.stop()
    report = result.report
    if not args.quiet:
        print(json.dumps({k: report[k] for k in ("input_records", "kept", "merged", "rejected", "clusters")}), file=sys.stderr)
    return EXIT_REJECTS if report["rejected"] else EXIT_DONE


def _state(previous: Optional[str]) -> Optional[str]:
    return None if previous is None else os.path.join(previous, "state")


if __name__ == "__main__":
    sys.exit(main())
