#!/usr/bin/env python3
"""Joins kiln's and its peers' benchmark results by case into Markdown tables (bench/RESULTS.md).

  compare.py --kiln KILN.jsonl --peers PEERS.jsonl [--machine TEXT] [--date YYYY-MM-DD] [-o OUT.md]

KILN.jsonl: the output of `kiln bench FILE --backend cuda --json` for every case, concatenated:
one line per kernel and one total line per case, each
  {case, kernel, median_ms, gbps, tflops, copy_gbps, pct_of_copy, backend, device}
where `case` is the .kiln file's stem and the total line has kernel "total" (also accepted: null,
missing, "" or "*"). A case with kernel lines but no total line gets the sum of its kernels'
times (marked "sum"). Lines of several backends: --kiln-backend picks one (default cuda; lines
without a backend field are taken as it).

PEERS.jsonl: bench/peers/harness.py's output, one line per (framework, case) with the fields
documented in bench/peers/README.md; records with "error" show as "error" (listed below the
table), the "d2d_copy" records give each framework's copy bandwidth.

Either file may be missing or empty: what is not measured shows as "n/a". Case order follows
bench/peers/cases.py (large cases, then examples), then any other case alphabetically.
"""

import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = ("jax", "torch")
PEER_TITLES = {"jax": "jax", "torch": "torch.compile"}
TOTAL_KERNELS = ("total", "", "*", None)
NA = "n/a"


def read_jsonl(paths):
    """Records from JSON-lines files; blank lines and lines that are not JSON objects are skipped
    (and counted, so a truncated log is visible)."""
    records, bad = [], 0
    for path in paths or []:
        if not path or not os.path.exists(path):
            continue
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    bad += 1
                    continue
                if isinstance(rec, dict) and rec.get("simulated"):
                    continue  # the GPU simulator's counters: no times to compare
                if isinstance(rec, dict) and rec.get("case"):
                    records.append(rec)
                else:
                    bad += 1
    return records, bad


def known_cases():
    """(ordered names, name -> (dtype, shape)) from bench/peers/cases.py, if it loads."""
    for d in (os.path.join(HERE, "peers"), HERE):
        if os.path.exists(os.path.join(d, "cases.py")):
            sys.path.insert(0, d)
            try:
                import cases
                all_cases = cases.all_cases()
                return [c.name for c in all_cases], {c.name: (c.dtype, c.shape) for c in all_cases}
            except Exception:  # noqa: BLE001: an unreadable examples dir must not stop the table
                return [], {}
            finally:
                sys.path.pop(0)
    return [], {}


def kiln_totals(records, backend="cuda"):
    """case -> {median_ms, gbps, tflops, copy_gbps, pct_of_copy, device, summed, kernels: [...]}."""
    # kiln bench's data-parallel lines ("section": "data_parallel") are not kernels of the step.
    chosen = [r for r in records if r.get("backend", backend) == backend and "section" not in r]
    out = {}
    for r in chosen:
        entry = out.setdefault(r["case"], {"kernels": [], "total": None})
        if r.get("kernel") in TOTAL_KERNELS:
            entry["total"] = r
        else:
            entry["kernels"].append(r)
    result = {}
    for case, entry in out.items():
        if entry["total"] is not None:
            t = dict(entry["total"])
            t["summed"] = False
        else:
            times = [k.get("median_ms") for k in entry["kernels"]]
            t = {"median_ms": sum(times) if times and all(isinstance(x, (int, float)) for x in times) else None,
                 "device": entry["kernels"][0].get("device"), "summed": True}
        t["kernels"] = entry["kernels"]
        result[case] = t
    return result


def peer_index(records):
    """(framework, case) -> record (the last one wins), and framework -> copy GB/s."""
    index, copy = {}, {}
    for r in records:
        fw = r.get("framework")
        if r["case"] == "d2d_copy":
            if r.get("gbps"):
                copy[fw] = r["gbps"]
            continue
        index[(fw, r["case"])] = r
    return index, copy


def fmt_ms(v):
    if not isinstance(v, (int, float)):
        return NA
    return f"{v:.4f}" if v < 0.1 else f"{v:.3f}" if v < 10 else f"{v:.1f}"


def fmt_num(v, digits=0):
    return f"{v:.{digits}f}" if isinstance(v, (int, float)) else NA


def fmt_tflops(v):
    if not isinstance(v, (int, float)):
        return NA
    return f"{v:.1f}" if v >= 10 else f"{v:.3g}"


def fmt_pct(v):
    return f"{v:.0f}%" if isinstance(v, (int, float)) else NA


def peer_cell(rec, field, formatter):
    if rec is None:
        return NA
    if rec.get("error"):
        return "skipped" if str(rec["error"]).startswith("skipped") else "error"
    return formatter(rec.get(field))


def build_table(kiln_records, peer_records, machine=None, date=None, backend="cuda", bad_lines=0):
    order, meta = known_cases()
    totals = kiln_totals(kiln_records, backend)
    peers, copy = peer_index(peer_records)
    for (fw, case), r in peers.items():
        meta.setdefault(case, (r.get("dtype") or NA, r.get("shape") or NA))
    measured = set(totals) | {case for _, case in peers}
    rows = [c for c in order if c in measured] + sorted(measured - set(order))

    devices = sorted({str(r.get("device")) for r in kiln_records + peer_records if r.get("device")})
    machine = machine or (", ".join(devices) if devices else "unknown device")
    date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    kiln_copy = next((t.get("copy_gbps") for t in totals.values() if t.get("copy_gbps")), None)

    lines = [f"## kiln vs jax.jit and torch.compile on {machine}, {date}", ""]
    lines.append("Device-to-device copy bandwidth measured in the same runs (bytes read + written): " + ", ".join(
        f"{name} {fmt_num(v)} GB/s" for name, v in
        [("kiln", kiln_copy)] + [(PEER_TITLES[fw], copy.get(fw)) for fw in PEERS]) + ".")
    lines.append("GB/s counts each input read once and each output written once (bench/peers/cases.py); "
                 "% of copy is against the same framework's own copy measurement.")
    lines.append("")
    if not rows:
        lines.append("No results: neither kiln bench nor the peers' harness produced records.")
        return "\n".join(lines) + "\n"
    header = ["case", "dtype", "shape", "kiln ms", "jax ms", "torch.compile ms", "kiln GB/s", "kiln % of copy",
              "jax % of copy", "torch.compile % of copy", "best peer / kiln"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * 3 + "---:|" * (len(header) - 3)]
    errors, sums = [], []
    for case in rows:
        dtype, shape = meta.get(case, (NA, NA))
        k = totals.get(case)
        kiln_ms = fmt_ms(k.get("median_ms")) if k else NA
        if k and k.get("summed") and kiln_ms != NA:
            kiln_ms += " (sum)"
            sums.append(case)
        p = {fw: peers.get((fw, case)) for fw in PEERS}
        peer_ms = [r["median_ms"] for r in p.values() if r and not r.get("error") and r.get("median_ms")]
        ratio = NA
        if k and isinstance(k.get("median_ms"), (int, float)) and k["median_ms"] > 0 and peer_ms:
            ratio = f"{min(peer_ms) / k['median_ms']:.2f}x"
        lines.append("| " + " | ".join([
            case, dtype, shape, kiln_ms, peer_cell(p["jax"], "median_ms", fmt_ms),
            peer_cell(p["torch"], "median_ms", fmt_ms), fmt_num(k.get("gbps")) if k else NA,
            fmt_pct(k.get("pct_of_copy")) if k else NA, peer_cell(p["jax"], "pct_of_copy", fmt_pct),
            peer_cell(p["torch"], "pct_of_copy", fmt_pct), ratio]) + " |")
        if k and k.get("check") == "FAIL":  # training steps: bench/peers/train_kiln.py checks kiln's results
            errors.append(f"- kiln, {case}: result check FAILED ({k.get('check_detail') or k.get('rel_err')})")
        for fw, r in p.items():
            if r and r.get("error"):
                errors.append(f"- {PEER_TITLES[fw]}, {case}: {r['error']}")
            elif r and r.get("check") == "FAIL":
                errors.append(f"- {PEER_TITLES[fw]}, {case}: result check FAILED (rel err {r.get('rel_err')})")

    compute = [c for c in rows if any((peers.get((fw, c)) or {}).get("tflops") for fw in PEERS)
               or (totals.get(c) or {}).get("tflops")]
    if compute:
        lines += ["", "Matrix products and convolutions (TFLOP/s; FLOPs = 2*M*N*K per product):", "",
                  "| case | dtype | kiln TFLOP/s | jax TFLOP/s | torch.compile TFLOP/s |", "|---|---|---:|---:|---:|"]
        for c in compute:
            k = totals.get(c) or {}
            lines.append(f"| {c} | {meta.get(c, (NA,))[0]} | {fmt_tflops(k.get('tflops'))} | "
                         f"{peer_cell(peers.get(('jax', c)), 'tflops', fmt_tflops)} | "
                         f"{peer_cell(peers.get(('torch', c)), 'tflops', fmt_tflops)} |")

    kernel_rows = [(c, kr) for c in rows for kr in (totals.get(c) or {}).get("kernels", [])]
    if kernel_rows:
        lines += ["", "kiln's kernels:", "", "| case | kernel | ms | GB/s | % of copy |", "|---|---|---:|---:|---:|"]
        for c, kr in kernel_rows:
            lines.append(f"| {c} | {kr.get('kernel')} | {fmt_ms(kr.get('median_ms'))} | {fmt_num(kr.get('gbps'))} | "
                         f"{fmt_pct(kr.get('pct_of_copy'))} |")
    notes = []
    if sums:
        notes.append(f"- kiln printed no total line for {', '.join(sums)}: its time is the sum of its kernels'.")
    if bad_lines:
        notes.append(f"- {bad_lines} input line(s) were not JSON records and were skipped.")
    if errors or notes:
        lines += ["", "Notes:", ""] + errors + notes
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", action="append", default=[], help="kiln bench JSON lines (repeatable)")
    ap.add_argument("--peers", action="append", default=[], help="peers' JSON lines (repeatable)")
    ap.add_argument("--kiln-backend", default="cuda", help="which backend's kiln lines to use (default cuda)")
    ap.add_argument("--machine", help="machine text for the header (default: the records' device names)")
    ap.add_argument("--date", help="date for the header (default: today, UTC)")
    ap.add_argument("-o", "--out", help="write the Markdown here instead of stdout")
    args = ap.parse_args(argv)
    kiln, bad1 = read_jsonl(args.kiln)
    peers, bad2 = read_jsonl(args.peers)
    text = build_table(kiln, peers, args.machine, args.date, args.kiln_backend, bad1 + bad2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
