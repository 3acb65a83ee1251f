#!/usr/bin/env python3
"""Corpus builders of scripts/bench_quality_corpora.sh (see its header for the recipe).

    build.py NAME --out DIR --cache DIR [--seed N]

NAME is one of recrawl, templates, cjk, short, chrome, manpages-meta. Each writes
DIR/corpus.jsonl ({"id", "body_text"} and "url" where hosts matter) and DIR/meta.jsonl
(one line per record, same order: {"id", "base", "kind", ...}): `base` names the real
document a record was made from (its edits and republications share it), `kind` says how
(original, an edit kind, a release, ...), and corpus-specific fields (`release`, `group`,
`host`) let the evaluation name each truth pair's kind. Everything is deterministic for a
given seed and the same inputs; downloads (PyPI sdists, Debian's Translation-en) are made
once into --cache and reused.
"""

import argparse
import glob
import json
import math
import os
import random
import re
import subprocess
import sys
import tarfile
import unicodedata
from concurrent.futures import ThreadPoolExecutor

# ----------------------------------------------------------------------------------------
# Output.


def write_corpus(out, records):
    """records: dicts with id, body_text, optional url, and meta fields."""
    os.makedirs(out, exist_ok=True)
    seen = set()
    with open(os.path.join(out, "corpus.jsonl.tmp"), "w") as c, \
            open(os.path.join(out, "meta.jsonl"), "w") as m:
        for r in records:
            if r["id"] in seen:
                raise SystemExit(f"duplicate id {r['id']}")
            seen.add(r["id"])
            rec = {"id": r["id"]}
            if r.get("url"):
                rec["url"] = r["url"]
            rec["body_text"] = r["body_text"]
            c.write(json.dumps(rec, ensure_ascii=False) + "\n")
            meta = {k: v for k, v in r.items() if k not in ("body_text", "url")}
            m.write(json.dumps(meta, ensure_ascii=False) + "\n")
    os.replace(os.path.join(out, "corpus.jsonl.tmp"), os.path.join(out, "corpus.jsonl"))
    kinds = {}
    for r in records:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    nbytes = sum(len(r["body_text"].encode()) for r in records)
    print(f"  {len(records)} records, {nbytes / 1e6:.1f} MB, kinds "
          f"{dict(sorted(kinds.items()))} -> {out}/corpus.jsonl", flush=True)


# ----------------------------------------------------------------------------------------
# Real text on this machine.

MAN_ENV = dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="0", LC_ALL="C.UTF-8")


def render_man(path):
    p = subprocess.run(["man", "-l", path], capture_output=True, env=MAN_ENV)
    text = p.stdout.decode("utf-8", "replace")
    text = re.sub(r".\x08", "", text)
    return text if len(text.strip()) > 200 else None


def render_all(paths, workers=2):
    with ThreadPoolExecutor(workers) as ex:
        return list(ex.map(render_man, paths))


def man_pages(sections=("man1", "man5", "man7", "man8"), gcloud=False):
    out = []
    for s in sections:
        for p in sorted(glob.glob(f"/usr/share/man/{s}/*")):
            name = os.path.basename(p)
            if name.startswith("gcloud") != gcloud:
                continue
            out.append(p)
    return out


def page_name(path):
    return re.sub(r"\.gz$", "", os.path.basename(path))


def words_of(text):
    return len(text.split())


def cut_words(text, max_words):
    """The text up to the paragraph where it passes max_words words."""
    if words_of(text) <= max_words:
        return text
    out, n = [], 0
    for para in text.split("\n\n"):
        out.append(para)
        n += words_of(para)
        if n >= max_words:
            break
    return "\n\n".join(out)


def vocabulary(texts):
    seen = set()
    for t in texts:
        for w in t.split():
            if 3 <= len(w) <= 12 and w.isascii() and w.isalpha():
                seen.add(w.lower())
    return sorted(seen)


# ----------------------------------------------------------------------------------------
# Edits of English text (the recipe of quality_eval's corpus, in Python).

NAMES = ["Maria Garcia", "John Smith", "Wei Zhang", "Olga Petrova", "Ahmed Hassan",
         "Laura Rossi", "Kenji Sato", "Fatima Diallo", "Peter Novak", "Ana Silva",
         "David Cohen", "Ingrid Larsen"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


def date(rng):
    return f"{rng.choice(MONTHS)} {rng.randint(1, 28)}, {rng.randint(2003, 2024)}"


def pieces(text):
    """Words with their trailing whitespace."""
    return re.findall(r"\s+|\S+\s*", text) if text[:1].isspace() else re.findall(r"\S+\s*", text)


def word_edits(text, k, rng, vocab):
    p = pieces(text)
    for _ in range(k):
        if len(p) < 2:
            break
        i = rng.randrange(len(p))
        w = rng.choice(vocab)
        op = rng.randrange(4)
        ws = re.sub(r"^\S*", "", p[i])
        if op <= 1:
            p[i] = w + ws
        elif op == 2:
            p.insert(i, w + " ")
        else:
            del p[i]
            if i > 0 and "\n" in ws:
                p[i - 1] = re.sub(r"\s*$", "", p[i - 1]) + ws
    return "".join(p)


def move_block(text, rng):
    paras = text.split("\n\n")
    if len(paras) >= 3:
        i = rng.randrange(len(paras))
        para = paras.pop(i)
        j = rng.randrange(len(paras) + 1)
        if j == i:
            j = (j + 1) % (len(paras) + 1)
        paras.insert(j, para)
        return "\n\n".join(paras)
    sents = re.split(r"(?<=\. )", text)
    if len(sents) >= 3:
        s = sents.pop(rng.randrange(len(sents)))
        sents.insert(rng.randrange(len(sents) + 1), s)
        return "".join(sents)
    return text


def byline(text, rng):
    name = rng.choice(NAMES)
    r = rng.randrange(3)
    if r == 0:
        return f"By {name}\n{date(rng)}\n\n{text}"
    if r == 1:
        return f"{text.rstrip()}\n\n--\nPosted by {name} on {date(rng)}. Last updated {date(rng)}.\n"
    changed = [False]

    def year(m):
        changed[0] = True
        return str(rng.randint(1990, 2024))
    out = re.sub(r"\b(19|20)\d\d\b", year, text)
    return out if changed[0] else f"{text.rstrip()}\n\nRevised {date(rng)}.\n"


def truncate(text, rng):
    keep = int(len(text) * (1 - rng.uniform(0.05, 0.15)))
    cut = text[:keep]
    m = re.search(r"\s\S*$", cut)
    return cut[:m.start()] if m else cut


def cosmetic(text, rng):
    mode = rng.randrange(3)
    lines = text.split("\n")
    out = []
    for n, line in enumerate(lines):
        if n > 0:
            r = rng.randrange(4)
            out.append(" " if mode == 0 and r <= 1 else "\n\n" if r == 0 else "\n")
        if mode == 1 and rng.random() < 0.3:
            line = line.upper()
        elif mode == 2:
            line = line.replace(", ", " ; ").replace(". ", "!  ")
        else:
            line = line.lstrip()
        out.append(line)
    return "".join(out)


def edit_en(text, rng, vocab):
    """One edited version: (kind, text)."""
    def one(k, t):
        if k < 45:
            n = max(words_of(t), 1)
            if rng.random() < 0.2:
                c = rng.randint(1, 3)
            else:
                c = max(1, round(math.exp(rng.uniform(math.log(0.002), math.log(0.12))) * n))
            return "words", word_edits(t, c, rng, vocab)
        if k < 55:
            return "move", move_block(t, rng)
        if k < 67:
            return "byline", byline(t, rng)
        if k < 79:
            return "truncate", truncate(t, rng)
        return "cosmetic", cosmetic(t, rng)
    k = rng.randrange(100)
    if k < 90:
        return one(k, text)
    a, t = one(rng.randrange(89), text)
    b, t = one(rng.randrange(89), t)
    return "two edits", t


# ----------------------------------------------------------------------------------------
# 1. recrawl: three releases of Django's documentation (docs/**/*.txt of the sdists).

DJANGO = ["4.1", "4.2", "5.0"]


def pypi_sdist(cache, name, version):
    d = os.path.join(cache, "pypi")
    os.makedirs(d, exist_ok=True)
    pat = os.path.join(d, f"[Dd]jango-{version}.tar.gz")
    found = glob.glob(pat)
    if not found:
        print(f"  fetching {name}=={version} (sdist) from PyPI once into {d}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "--no-binary", ":all:", f"{name}=={version}",
                        "-d", d], check=True)
        found = glob.glob(pat)
    if not found:
        raise SystemExit(f"no sdist of {name}=={version} in {d}")
    return found[0]


def build_recrawl(args):
    records = []
    for ri, version in enumerate(DJANGO):
        path = pypi_sdist(args.cache, "django", version)
        pages = []
        with tarfile.open(path) as tf:
            for m in tf.getmembers():
                parts = m.name.split("/", 2)
                if (m.isfile() and len(parts) == 3 and parts[1] == "docs"
                        and m.name.endswith(".txt")):
                    text = tf.extractfile(m).read().decode("utf-8", "replace")
                    if words_of(text) >= 1:
                        pages.append((parts[2], text))
        pages.sort()
        for rel, text in pages:
            records.append({"id": f"django-{version}:{rel}",
                            "url": f"https://docs.example/{version}/{rel}",
                            "body_text": text, "base": rel, "kind": f"release {version}",
                            "release": ri})
        print(f"  Django {version}: {len(pages)} pages", flush=True)
    random.Random(args.seed).shuffle(records)
    write_corpus(args.out, records)


# ----------------------------------------------------------------------------------------
# 2. templates: gcloud reference pages of a few command groups (GA, beta, alpha) and
#    Debian long descriptions of whole source-package families.

GCLOUD_GROUPS = ["compute_disks", "compute_networks", "compute_routers",
                 "container_clusters", "container_node-pools", "iam", "pubsub", "sql",
                 "dns", "functions", "storage"]
# Without gcloud: other families whose pages share their layout.
FALLBACK_FAMILIES = ["git", "systemd", "perl", "llvm", "openssl", "dpkg", "pg", "x86"]


def debian_descriptions(cache):
    """Every package's short and long description (Debian's Translation-en, fetched once
    with `apt-get update -o Acquire::Languages=en`) with its source package, cached."""
    path = os.path.join(cache, "debian-descriptions.jsonl")
    if os.path.exists(path):
        return [json.loads(x) for x in open(path)]
    lists = "/var/lib/apt/lists"
    if not glob.glob(f"{lists}/*bookworm_main_i18n_Translation-en*"):
        print("  fetching Debian's package lists with English descriptions once "
              "(apt-get update -o Acquire::Languages=en)", flush=True)
        subprocess.run(["apt-get", "update", "-q", "-o", "Acquire::Languages=en"],
                       check=True, stdout=subprocess.DEVNULL)

    def cat(f):
        return subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", f], check=True,
                              capture_output=True).stdout.decode("utf-8", "replace")

    def stanzas(text):
        for block in text.split("\n\n"):
            fields, key = {}, None
            for line in block.split("\n"):
                if line.startswith(" ") and key:
                    fields[key] += "\n" + line
                elif ":" in line:
                    key, _, v = line.partition(":")
                    fields[key] = v.strip()
            if "Package" in fields:
                yield fields

    source, section = {}, {}
    for f in sorted(glob.glob(f"{lists}/*bookworm_main_binary-amd64_Packages*")):
        for st in stanzas(cat(f)):
            src = st.get("Source", st["Package"]).split(" ")[0]
            source[(st["Package"], st.get("Description-md5"))] = src
            section[st["Package"]] = st.get("Section", "")
    out, seen = [], set()
    for f in sorted(glob.glob(f"{lists}/*bookworm_main_i18n_Translation-en*")):
        for st in stanzas(cat(f)):
            key = (st["Package"], st.get("Description-md5"))
            if key not in source or st["Package"] in seen:
                continue
            seen.add(st["Package"])
            short, _, long = st.get("Description-en", "").partition("\n")
            paras = []
            for line in long.split("\n"):
                line = line[1:] if line.startswith(" ") else line
                paras.append("" if line.strip() == "." else line)
            out.append({"package": st["Package"], "source": source[key],
                        "section": section.get(st["Package"], ""), "short": short.strip(),
                        "long": "\n".join(paras).strip()})
    out.sort(key=lambda r: r["package"])
    if len(out) < 1000:
        raise SystemExit(f"only {len(out)} Debian descriptions found")
    os.makedirs(cache, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        for r in out:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(path + ".tmp", path)
    print(f"  {len(out)} Debian descriptions cached in {path}", flush=True)
    return out


def build_templates(args):
    rng = random.Random(args.seed)
    records = []
    pages = man_pages(("man1",), gcloud=True)
    chosen = []
    for p in pages:
        name = page_name(p)[:-2]  # gcloud_beta_compute_disks_create
        parts = name.split("_")
        track = parts[1] if len(parts) > 1 and parts[1] in ("alpha", "beta") else "ga"
        command = "_".join(parts[2:] if track != "ga" else parts[1:])
        if any(command == g or command.startswith(g + "_") for g in GCLOUD_GROUPS):
            chosen.append((p, name, track, command))
    if len(chosen) >= 300:
        texts = render_all([c[0] for c in chosen])
        for (p, name, track, command), text in zip(chosen, texts):
            if text:
                records.append({"id": f"man:{name}", "body_text": text,
                                "url": f"https://cloud.example/sdk/{name.replace('_', '/')}",
                                "base": name, "kind": "gcloud page", "group": f"gcloud:{command}",
                                "track": track})
        print(f"  gcloud reference pages of {len(GCLOUD_GROUPS)} groups: "
              f"{len(records)} rendered", flush=True)
    else:
        fams = [p for p in man_pages(("man1", "man5", "man7", "man8"))
                if any(page_name(p).startswith(f) for f in FALLBACK_FAMILIES)]
        texts = render_all(fams)
        for p, text in zip(fams, texts):
            if text:
                name = page_name(p)
                records.append({"id": f"man:{name}", "body_text": text,
                                "url": f"https://man.example/{name}", "base": name,
                                "kind": "man page of a family", "group": f"man:{name}"})
        print(f"  no gcloud pages: {len(records)} man pages of the families "
              f"{FALLBACK_FAMILIES}", flush=True)
    # Debian: whole source families (>= 3 binaries with a long description).
    descs = debian_descriptions(args.cache)
    fam = {}
    for d in descs:
        if d["long"]:
            fam.setdefault(d["source"], []).append(d)
    sources = sorted(s for s, v in fam.items() if len(v) >= 3)
    rng.shuffle(sources)
    n = 0
    for s in sources:
        if n >= 1500:
            break
        for d in fam[s][:10]:
            records.append({"id": f"deb:{d['package']}", "body_text": f"{d['short']}\n\n{d['long']}\n",
                            "url": f"https://packages.example/{s}/{d['package']}",
                            "base": d["package"], "kind": "Debian description",
                            "group": f"deb:{s}"})
            n += 1
    print(f"  Debian long descriptions: {n} packages of {len(sources)} source families "
          f"with 3+ binaries (first families of a seeded shuffle)", flush=True)
    rng.shuffle(records)
    write_corpus(args.out, records)


# ----------------------------------------------------------------------------------------
# 3. cjk: Debian fortunes-zh (Chinese quotes, Tang and Song poems), with edits.

ANSI = re.compile(r"\x1b\[[0-9;]*m")
HAN = re.compile(r"[\u3400-\u9fff]")
PUNCT_SWAPS = [("，", ","), ("。", "."), ("：", ":"), ("；", ";"), ("？", "?"), ("！", "!"),
               ("“", "\""), ("”", "\""), ("（", "("), ("）", ")")]


def fortunes(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    text = ANSI.sub("", text)
    return [e.strip("\n") for e in re.split(r"\n%\n", text) if e.strip()]


def ensure_package(pkg, probe):
    if not os.path.exists(probe):
        print(f"  installing Debian package {pkg} (apt-get, once)", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        cmd = ["apt-get", "install", "-y", "-q", pkg]
        if subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode:
            subprocess.run(["apt-get", "update", "-q"], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    if not os.path.exists(probe):
        raise SystemExit(f"{probe} missing after installing {pkg}")


def edit_zh(text, rng, vocab):
    def chars(t):
        han = [i for i, c in enumerate(t) if HAN.match(c)]
        if not han:
            return t
        f = math.exp(rng.uniform(math.log(0.005), math.log(0.10)))
        k = max(1, round(f * len(han))) if rng.random() > 0.25 else rng.randint(1, 2)
        s = list(t)
        for _ in range(k):
            han = [i for i, c in enumerate(s) if HAN.match(c)]
            if len(han) < 2:
                break
            i = rng.choice(han)
            op = rng.randrange(4)
            if op <= 1:
                s[i] = rng.choice(vocab)
            elif op == 2:
                s.insert(i, rng.choice(vocab))
            else:
                del s[i]
        return "".join(s)

    def punct(t):
        mode = rng.randrange(3)
        if mode == 0:   # full-width to ASCII punctuation
            for a, b in PUNCT_SWAPS:
                t = t.replace(a, b)
            return t
        if mode == 1:   # drop some punctuation, join lines
            return re.sub(r"[，、]", lambda m: "" if rng.random() < 0.5 else m.group(0),
                          t).replace("\n", "")
        return re.sub(r"[，。]", lambda m: "、" if rng.random() < 0.3 else m.group(0), t)

    def move(t):
        sents = [s for s in re.split(r"(?<=[。！？\n])", t) if s]
        if len(sents) < 3:
            return t
        s = sents.pop(rng.randrange(len(sents)))
        sents.insert(rng.randrange(len(sents) + 1), s)
        return "".join(sents)

    def source(t):
        r = rng.randrange(3)
        y, m, d = rng.randint(2005, 2024), rng.randint(1, 12), rng.randint(1, 28)
        if r == 0:
            return f"转自网络 {y}年{m}月{d}日\n\n{t}"
        if r == 1:
            return f"{t.rstrip()}\n\n（本文发布于{y}年{m}月{d}日，转载请注明出处）\n"
        return f"{t.rstrip()}\n\n—— 摘自《每日一句》第{rng.randint(1, 999)}期\n"

    def trunc(t):
        keep = int(len(t) * (1 - rng.uniform(0.05, 0.15)))
        return t[:keep]

    def one(k, t):
        if k < 45:
            return "characters", chars(t)
        if k < 60:
            return "punctuation", punct(t)
        if k < 72:
            return "move", move(t)
        if k < 84:
            return "source line", source(t)
        return "truncate", trunc(t)
    k = rng.randrange(100)
    if k < 88:
        return one(k, text)
    a, t = one(rng.randrange(100), text)
    b, t = one(rng.randrange(100), t)
    return "two edits", t


def build_cjk(args):
    rng = random.Random(args.seed)
    ensure_package("fortunes-zh", "/usr/share/games/fortunes/tang300")
    docs = []
    for name in ["chinese", "tang300", "song100"]:
        entries = fortunes(f"/usr/share/games/fortunes/{name}")
        # Documents of one entry or of several consecutive entries (a page of quotes),
        # of 30 to 1,500 Han characters, log-uniform.
        i = 0
        while i < len(entries):
            target = math.exp(rng.uniform(math.log(30), math.log(1500)))
            parts, n = [], 0
            while i < len(entries) and n < target:
                parts.append(entries[i])
                n += len(HAN.findall(entries[i]))
                i += 1
            if n >= 8:
                docs.append((f"{name}:{len(docs)}", "\n\n".join(parts)))
    rng.shuffle(docs)
    docs = docs[:1600]
    vocab = sorted({c for _, t in docs for c in t if HAN.match(c)})
    records = []
    for base, text in docs:
        records.append({"id": base, "body_text": text, "base": base, "kind": "original"})
        if rng.random() < 0.5:
            k1, v1 = edit_zh(text, rng, vocab)
            records.append({"id": f"{base}~1", "body_text": v1, "base": base, "kind": k1})
            if rng.random() < 0.25:
                k2, v2 = edit_zh(text, rng, vocab)
                records.append({"id": f"{base}~2", "body_text": v2, "base": base, "kind": k2})
            if rng.random() < 0.2:
                k3, v3 = edit_zh(v1, rng, vocab)
                records.append({"id": f"{base}~1~3", "body_text": v3, "base": base,
                                "kind": "edit of an edit"})
    rng.shuffle(records)
    write_corpus(args.out, records)


# ----------------------------------------------------------------------------------------
# 4. short: English fortunes, Debian short descriptions, man page titles, small edits.

def edit_short(text, rng, vocab):
    def typo(t):
        words = [m for m in re.finditer(r"[A-Za-z]{4,}", t)]
        if not words:
            return t
        m = rng.choice(words)
        w = m.group(0)
        i = rng.randrange(len(w) - 1)
        op = rng.randrange(3)
        if op == 0:
            w2 = w[:i] + w[i + 1] + w[i] + w[i + 2:]
        elif op == 1:
            w2 = w[:i] + w[i + 1:]
        else:
            w2 = w[:i] + w[i] + w[i:]
        return t[:m.start()] + w2 + t[m.end():]

    def word(t):
        return word_edits(t, 1, rng, vocab)

    def case_punct(t):
        r = rng.randrange(4)
        if r == 0:
            return t.lower()
        if r == 1:
            return t.rstrip().rstrip(".!") if t.rstrip()[-1:] in ".!" else t.rstrip() + "."
        if r == 2:
            return t.replace(", ", "; ").replace(" - ", ": ")
        return t.upper() if len(t) < 80 else t.title()

    def attribution(t):
        m = re.search(r"\n\s*--\s*(.+)$", t)
        if m and rng.random() < 0.5:
            return t[:m.start()]
        if m:
            return t[:m.start(1)] + rng.choice(NAMES) + t[m.end(1):]
        return f"{t.rstrip()}\n\t\t-- {rng.choice(NAMES)}"

    def frame(t):
        return rng.choice(["Re: ", "Fwd: ", "Quote of the day: ", "> ", "[updated] "]) + t

    def reflow(t):
        return " ".join(t.split()) if "\n" in t else re.sub(r"(\S+ \S+ \S+ \S+) ", r"\1\n", t, 1)

    k = rng.randrange(100)
    for lim, name, f in [(25, "typo", typo), (50, "one word", word), (65, "case/punctuation", case_punct),
                         (78, "attribution", attribution), (88, "prefix", frame),
                         (95, "reflow", reflow), (100, "repost", lambda t: t)]:
        if k < lim:
            return name, f(text)


def build_short(args):
    rng = random.Random(args.seed)
    ensure_package("fortunes", "/usr/share/games/fortunes/fortunes")
    base = []
    skip = {"chinese", "tang300", "song100"}
    ents = []
    for p in sorted(glob.glob("/usr/share/games/fortunes/*")):
        name = os.path.basename(p)
        if "." in name or name in skip or not os.path.isfile(p):
            continue
        for i, e in enumerate(fortunes(p)):
            if 3 <= words_of(e) <= 60 and e.isascii():
                ents.append((f"fortune:{name}:{i}", e))
    rng.shuffle(ents)
    base += [(i, t, "fortune") for i, t in ents[:1300]]
    descs = debian_descriptions(args.cache)
    shorts = sorted({d["short"] for d in descs if words_of(d["short"]) >= 2})
    rng.shuffle(shorts)
    base += [(f"deb-short:{n}", t, "package description") for n, t in enumerate(shorts[:900])]
    titles = subprocess.run(["apropos", "-l", "."], capture_output=True,
                            env=MAN_ENV).stdout.decode("utf-8", "replace").splitlines()
    titles = sorted({re.sub(r"\s+", " ", t).strip() for t in titles if " - " in t})
    gtitles = [t for t in titles if t.startswith("gcloud")]
    otitles = [t for t in titles if not t.startswith("gcloud")]
    rng.shuffle(gtitles)
    rng.shuffle(otitles)
    base += [(f"title:{n}", t, "man page title") for n, t in enumerate(otitles[:300] + gtitles[:150])]
    vocab = vocabulary(t for _, t, _ in base)
    records = []
    for bid, text, src in base:
        records.append({"id": bid, "body_text": text, "base": bid, "kind": "original",
                        "group": src})
        if rng.random() < 0.4:
            k, v = edit_short(text, rng, vocab)
            records.append({"id": f"{bid}~1", "body_text": v, "base": bid, "kind": k, "group": src})
            if rng.random() < 0.15:
                k, v = edit_short(text, rng, vocab)
                records.append({"id": f"{bid}~2", "body_text": v, "base": bid, "kind": k,
                                "group": src})
    rng.shuffle(records)
    write_corpus(args.out, records)


# ----------------------------------------------------------------------------------------
# 5. chrome: site chrome (navigation, sidebar, footer) of 8 hosts around real articles.

HOSTS = ["www.lantern-docs.example", "kb.riverside.example", "wiki.northwind.example",
         "help.ambercloud.example", "docs.quartzlab.example", "library.fernhill.example",
         "manuals.bluepeak.example", "notes.harbor.example"]


def paragraphs_of(text, min_words=15):
    return [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text)
            if words_of(p) >= min_words]


def take_words(paras, rng, lo, hi):
    """Consecutive paragraphs from a random start until lo..hi words."""
    want = rng.randint(lo, hi)
    i = rng.randrange(len(paras))
    out, n = [], 0
    while n < want:
        p = paras[i % len(paras)]
        out.append(p)
        n += words_of(p)
        i += 1
    return " ".join(" ".join(out).split()[:want])


def build_chrome(args):
    rng = random.Random(args.seed)
    # Articles: English man pages (no gcloud) and README files of /usr/share/doc.
    pages = man_pages()
    rng.shuffle(pages)
    pages = sorted(pages[:1400])
    texts = render_all(pages)
    arts, seen = [], set()
    for p, t in zip(pages, texts):
        if t and words_of(t) >= 80:
            t = cut_words(t, 8000)
            key = " ".join(t.split()).lower()
            if key not in seen:
                seen.add(key)
                arts.append((f"man:{page_name(p)}", t))
    for p in sorted(glob.glob("/usr/share/doc/*/README*")):
        if p.endswith((".gz", ".html", ".md.gz")) or not os.path.isfile(p):
            continue
        try:
            t = open(p, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        if words_of(t) >= 80:
            t = cut_words(t, 8000)
            key = " ".join(t.split()).lower()
            if key not in seen:
                seen.add(key)
                arts.append((f"doc:{p.split('/')[4]}/{os.path.basename(p)}", t))
    arts.sort()
    rng.shuffle(arts)
    per_host = 160
    arts = arts[:per_host * len(HOSTS)]
    # A quarter are stubs (summary pages): the first 10-120 words of the text, so that some
    # pages are mostly chrome, as on real sites.
    stubs = 0
    for i, (base, text) in enumerate(arts):
        if rng.random() < 0.25:
            p = pieces(text.strip())
            arts[i] = (base, "".join(p[:rng.randint(10, 120)]).rstrip() + "\n")
            stubs += 1
    print(f"  {len(arts)} articles ({stubs} stubs of 10-120 words), {per_host} a host",
          flush=True)
    # Chrome material: licence texts and man page titles.
    lic = {}
    for p in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(p) and not os.path.islink(p):
            paras = paragraphs_of(open(p, encoding="utf-8", errors="replace").read())
            if len(paras) >= 5:
                lic[os.path.basename(p)] = paras
    lic_names = sorted(lic)
    titles = subprocess.run(["apropos", "-l", "."], capture_output=True,
                            env=MAN_ENV).stdout.decode("utf-8", "replace").splitlines()
    titles = sorted({t.split(" - ", 1)[1].strip() for t in titles
                     if " - " in t and not t.startswith("gcloud")})
    if len(titles) < 100:  # no apropos index: the pages' names
        titles = sorted({page_name(p).split(".")[0].replace("_", " ") for p in man_pages()})
    chrome = {}
    for h in HOSTS:
        site = h.split(".")[1].capitalize()
        nav = rng.sample(titles, rng.randint(12, 20))
        side_lic, foot_lic = rng.sample(lic_names, 2)
        chrome[h] = {
            "head": f"{site} Documentation\nHome | " + " | ".join(nav) +
                    "\nSearch the documentation Sign in Register Contact us",
            "side": "About this site\n" + take_words(lic[side_lic], rng, 120, 220),
            "foot": take_words(lic[foot_lic], rng, 60, 130) +
                    f"\nCopyright {rng.randint(2005, 2020)}-2024 {site} contributors. "
                    "All rights reserved. Privacy policy | Terms of use | Accessibility | Sitemap",
            "sections": rng.sample(titles, 6),
        }
    vocab = vocabulary(t for _, t in arts[:300])
    by_host = {h: [] for h in HOSTS}
    records = []

    def page(host, base, text, kind, n):
        c = chrome[host]
        title = text.strip().split("\n")[0].strip()[:80]
        slug = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")
        related = rng.sample(by_host[host] or [title], min(5, len(by_host[host]) or 1))
        body = (f"{c['head']}\n\nHome > {rng.choice(c['sections'])} > {title}\n\n{text.strip()}\n\n"
                f"Related pages: {'; '.join(related)}\nLast updated {date(rng)}\n\n{c['side']}\n\n"
                f"{c['foot']}\n")
        by_host[host].append(title)
        records.append({"id": f"{host}/{slug}/{n}", "url": f"https://{host}/articles/{slug}-{n}",
                        "body_text": body, "base": base, "kind": kind, "host": host})

    for i, (base, text) in enumerate(arts):
        page(HOSTS[i % len(HOSTS)], base, text, "original", 0)
    for i, (base, text) in enumerate(arts):
        home = HOSTS[i % len(HOSTS)]
        r = rng.random()
        if r < 0.20:
            other = rng.choice([h for h in HOSTS if h != home])
            page(other, base, text, "republished on another host", 1)
        elif r < 0.30:
            other = rng.choice([h for h in HOSTS if h != home])
            k, t = edit_en(text, rng, vocab)
            page(other, base, t, "republished and edited", 1)
        elif r < 0.45:
            k, t = edit_en(text, rng, vocab)
            page(home, base, t, "edited on its host", 1)
    rng.shuffle(records)
    write_corpus(args.out, records)
    # The articles alone: their own truth tells template pairs (different articles alike
    # only through the host's chrome) from articles whose text is itself alike.
    write_corpus(os.path.join(args.out, "articles"),
                 [{"id": base, "body_text": text, "base": base, "kind": "article"}
                  for base, text in arts])


# ----------------------------------------------------------------------------------------
# 6. manpages: quality_eval's corpus (built by the shell script); only its meta here.

def build_manpages_meta(args):
    """quality_eval ids: BASE, BASE~1-KIND, BASE~2-KIND, BASE~1~3-KIND."""
    with open(os.path.join(args.out, "corpus.jsonl")) as f, \
            open(os.path.join(args.out, "meta.jsonl"), "w") as m:
        for line in f:
            rid = json.loads(line)["id"]
            if "~" not in rid:
                base, kind = rid, "original"
            else:
                base = rid.split("~", 1)[0]
                k = rid.rsplit("-", 1)[1]
                kind = "two edits" if "+" in k else re.sub(r"\d+", "", k)
                if "~1~3" in rid:
                    kind = "edit of an edit"
            m.write(json.dumps({"id": rid, "base": base, "kind": kind}) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name", choices=["recrawl", "templates", "cjk", "short", "chrome",
                                     "manpages-meta"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", default="bench-out/quality-corpora/cache")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    {"recrawl": build_recrawl, "templates": build_templates, "cjk": build_cjk,
     "short": build_short, "chrome": build_chrome,
     "manpages-meta": build_manpages_meta}[args.name](args)


if __name__ == "__main__":
    main()
