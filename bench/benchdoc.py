"""What the benchmark reports share: ratios, markdown tables, and replacing
their own section of docs/BENCHMARKS.md while leaving the others alone."""
import json
import os
import re
import statistics


def load(path):
    """The JSON objects of a results.jsonl, one per line; other lines skipped."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass
    return rows


def med(vals):
    """The median of the values that are not None, or None."""
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def fmt_ratio(x, limit=None):
    """x as 0.012x / 1.23x / 45x; with a limit, marked met (<=) or missed."""
    if x is None:
        return "–"
    s = "%.3fx" % x if x < 0.1 else ("%.2fx" % x if x < 10 else "%.0fx" % x)
    if limit is not None:
        s += " ✓" if x <= limit else " ✗"
    return s


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def replace_section(doc, heading, section):
    """Puts section (starting with `## heading`) in place of the old one in
    doc, up to the next `## `, or at the end when there is none yet."""
    text = ""
    if os.path.exists(doc):
        with open(doc) as f:
            text = f.read()
    if not text.strip():
        text = "# Benchmarks\n\n"
    pat = re.compile(r"^## " + re.escape(heading) + r"\n.*?(?=^## |\Z)", re.M | re.S)
    if pat.search(text):
        text = pat.sub(lambda m: section + "\n", text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(doc, "w") as f:
        f.write(text)
