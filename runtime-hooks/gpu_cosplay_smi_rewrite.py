"""Pure rewrite logic for the nvidia-smi shim (no processes, no I/O): unit-testable on real captures.

A Rewriter is fed one line at a time (without its newline) and returns the lines to print. Plain lines
(dmon, pmon, -L, -q, CSV) come back at once. Lines of a |-bordered table are held until the table block is
complete (the end of the Processes section, a non-table line, or flush()) because the GPU row's memory figure
depends on the MIG devices section printed below it; the shim also flushes when the child goes quiet.

What is rewritten (see README.md):
- default table: GPU name (kept to the cell's width, truncated with '...'), memory used/total, power cap,
  "MIG M." value -> N/A, the whole "MIG devices:" section dropped, GI/CI ids in Processes -> N/A, the
  MPS server's process name -> a label saying its memory is its clients' (NVML counts client memory there);
  every rewritten table line keeps its exact length;
- -L: the name; MIG sub-lines dropped;
- -q / -a: Product Name, FB Memory Usage (Total/Reserved/Used/Free), power limits, MIG Mode -> N/A,
  the MIG Devices subsection dropped; -q -x (XML): product_name, fb_memory_usage, power limits;
- --query-gpu CSV: name, memory.total/used/free/reserved, power.limit/default_limit/min_limit/max_limit,
  enforced.power.limit, mig.mode.* ; with and without units and header.

Several cosplayed devices (`ranks`: the uuids of GPU_COSPLAY_RANKS, two or more): the default table shows N target
cards, indexes 0..N-1, copies of the first GPU's rewritten rows, each with the memory its slice uses (rank i = the
i-th row of the MIG devices section, so the host lists the ranks in MIG-device order; without MIG, MPS shares of one
GPU, each copy shows the whole GPU's use); a process row's GPU index becomes the rank whose GPU instance it runs in;
-L prints `GPU i: <target> (UUID: <rank i's uuid>)` for each rank in place of the first GPU and its MIG lines (later
physical GPUs are dropped); --query-gpu prints the first GPU's row once per rank (index, uuid and count the rank's and
the session's, memory the GPU's as without ranks; later physical GPUs' rows dropped, a GPU told apart by its index,
uuid, bus id or serial where the query names one). Not done for N ranks: -q/-a/-x still describe the physical GPU(s)
once.
"""

import re

_NUM_W = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*W\s*$")
_NUM_MIB = re.compile(r"^\s*(\d+)\s*MiB\s*$")

POWER_KEYS_Q = {
    "power limit": "set",
    "current power limit": "set",
    "requested power limit": "set",
    "default power limit": "set",
    "enforced power limit": "set",
    "max power limit": "set",
    "min power limit": "min",
}

CSV_ALIASES = {"gpu_name": "name", "power.limit": "power.limit", "enforced.power.limit": "enforced.power.limit"}


def fit(text, width, align="left"):
    """Fit text into exactly `width` characters; too long -> truncated with '...' (as nvidia-smi does)."""
    if width <= 0:
        return ""
    if len(text) > width:
        text = text[: max(0, width - 3)] + "..." if width > 3 else text[:width]
    return text.ljust(width) if align == "left" else text.rjust(width)


def _sub_right(s, start, end, new):
    """Replace s[start:end] with `new` right-aligned in the same span; if `new` is longer, borrow spaces
    from the left of the span (keeping one). Total length never changes unless impossible."""
    width = end - start
    if len(new) <= width:
        return s[:start] + new.rjust(width) + s[end:]
    extra = len(new) - width
    lead = start
    while extra > 0 and lead > 1 and s[lead - 1] == " " and s[lead - 2] == " ":
        lead -= 1
        extra -= 1
    if extra > 0:
        new = new[extra:]  # last resort: keep the width
    return s[:lead] + new.rjust(end - lead) + s[end:]


def _fmt_w(value):
    return "%d" % int(round(value))


class Rewriter(object):
    def __init__(self, name, cap_mib, tdp_w=None, args=(), ranks=None):
        self.name = name
        self.ranks = list(ranks) if ranks and len(ranks) > 1 else None  # uuids, one per cosplayed device
        self.l_done = False
        self.csv_first_gpu = None  # with ranks: what identifies the first GPU's row in --query-gpu output
        self.cap = int(cap_mib)
        self.tdp = float(tdp_w) if tdp_w else None
        self.args = list(args or [])
        self.table = []  # held table block
        self.block_state = None
        self.q_stack = []  # -q section stack: (indent, title)
        self.q_drop_indent = None
        self.q_reserved = 0
        self.q_used = 0
        self.xml_section = []
        self.csv_fields = None
        self.csv_units = True
        self.csv_header = True
        self.csv_seen = 0
        self._parse_args()

    # ----------------------------------------------------------------------------------------- args
    def _parse_args(self):
        args = self.args
        query = None
        fmt = None
        i = 0
        while i < len(args):
            a = args[i]
            for flag in ("--query-gpu", "--query-gpus"):
                if a == flag and i + 1 < len(args):
                    query = args[i + 1]
                elif a.startswith(flag + "="):
                    query = a.split("=", 1)[1]
            if a == "--format" and i + 1 < len(args):
                fmt = args[i + 1]
            elif a.startswith("--format="):
                fmt = a.split("=", 1)[1]
            i += 1
        if query:
            self.csv_fields = [f.strip().lower() for f in query.split(",") if f.strip()]
            opts = [o.strip().lower() for o in (fmt or "csv").split(",")]
            self.csv_units = "nounits" not in opts
            self.csv_header = "noheader" not in opts

    # ----------------------------------------------------------------------------------------- API
    def pending(self):
        return bool(self.table)

    def feed(self, line):
        line = line.rstrip("\n")
        if self.csv_fields is not None:
            return self._csv_rows(line)
        if line.startswith("|") or line.startswith("+"):
            self.table.append(line)
            if self._table_block_done(line):
                return self.flush()
            return []
        if self.table and line.strip() == "":
            self.table.append(line)
            return []
        out = self.flush()
        if self.ranks and self._L_GPU.match(line):
            if not self.l_done:  # -L: one line per rank in place of the physical GPU(s)
                self.l_done = True
                out.extend("GPU %d: %s (UUID: %s)" % (i, self.name, u) for i, u in enumerate(self.ranks))
            return out
        res = self._plain(line)
        if res is not None:
            out.append(res)
        return out

    def flush(self):
        if not self.table:
            return []
        lines, self.table = self.table, []
        self.block_state = None
        try:
            return rewrite_table_block(lines, self)
        except Exception:
            return lines

    def finish(self):
        return self.flush()

    def _table_block_done(self, line):
        # The Processes section is the last one nvidia-smi prints: its closing border ends the frame.
        st = self.block_state
        if line.startswith("| Processes:") or line.startswith("|  Processes:"):
            self.block_state = "proc"
        elif st == "proc" and line.startswith("|="):
            self.block_state = "proc-body"
        elif st == "proc-body" and line.startswith("+"):
            return True
        return False

    # ----------------------------------------------------------------------------------------- plain lines
    _L_GPU = re.compile(r"^(\s*GPU \d+: )(.+?)( \(UUID: .*)$")
    _L_MIG = re.compile(r"^\s+MIG \S.*Device\s+\d+:")
    _Q_KV = re.compile(r"^(\s+)([^:]*?\S)(\s*): (.*)$")
    _Q_HDR = re.compile(r"^(\s+)(\S[^:]*?)\s*$")
    _XML = re.compile(r"^(\s*)<([a-z_0-9]+)>([^<]*)</([a-z_0-9]+)>\s*$")
    _XML_OPEN = re.compile(r"^\s*<([a-z_0-9]+)(\s[^>]*)?>\s*$")
    _XML_CLOSE = re.compile(r"^\s*</([a-z_0-9]+)>\s*$")

    def _plain(self, line):
        m = self._L_GPU.match(line)
        if m:
            return m.group(1) + self.name + m.group(3)
        if self._L_MIG.match(line):
            return None
        if line.lstrip().startswith("<"):
            return self._xml(line)
        return self._q(line)

    def _q(self, line):
        stripped = line.strip()
        if not stripped:
            return line
        indent = len(line) - len(line.lstrip(" "))
        if not line.startswith(" "):
            self.q_stack = []
            self.q_drop_indent = None
            return line
        if self.q_drop_indent is not None:
            if indent > self.q_drop_indent:
                return None
            self.q_drop_indent = None
        while self.q_stack and self.q_stack[-1][0] >= indent:
            self.q_stack.pop()
        m = self._Q_KV.match(line)
        if not m:
            h = self._Q_HDR.match(line)
            if h:
                title = h.group(2).strip()
                if title.lower() == "mig devices":
                    self.q_drop_indent = indent
                    return None
                self.q_stack.append((indent, title))
                if title.lower() == "fb memory usage":
                    self.q_reserved = 0
                    self.q_used = 0
            return line
        key = m.group(2).strip()
        lkey = key.lower()
        value = m.group(4)
        section = self.q_stack[-1][1].lower() if self.q_stack else ""
        new = None
        if lkey == "product name":
            new = self.name
        elif lkey == "mig devices" and value.strip().lower() in ("none", "n/a"):
            new = None
        elif section == "mig mode" and lkey in ("current", "pending"):
            new = "N/A"
        elif section == "fb memory usage" and len(self.q_stack) == 1:
            mm = _NUM_MIB.match(value)
            if mm:
                v = int(mm.group(1))
                if lkey == "total":
                    new = "%d MiB" % self.cap
                elif lkey == "reserved":
                    self.q_reserved = min(v, self.cap)
                    new = "%d MiB" % self.q_reserved
                elif lkey == "used":
                    self.q_used = max(0, min(v, self.cap - self.q_reserved))
                    new = "%d MiB" % self.q_used
                elif lkey == "free":
                    new = "%d MiB" % max(0, self.cap - self.q_reserved - self.q_used)
        elif self.tdp and section in ("power readings", "gpu power readings") and lkey in POWER_KEYS_Q:
            mw = _NUM_W.match(value)
            if mw:
                v = float(mw.group(1))
                t = self.tdp if POWER_KEYS_Q[lkey] == "set" else min(v, self.tdp)
                new = "%.2f W" % t
        if new is None:
            return line
        return m.group(1) + m.group(2) + m.group(3) + ": " + new

    def _xml(self, line):
        mo = self._XML_OPEN.match(line)
        if mo:
            self.xml_section.append(mo.group(1))
            return line
        mc = self._XML_CLOSE.match(line)
        if mc:
            if self.xml_section and self.xml_section[-1] == mc.group(1):
                self.xml_section.pop()
            return line
        m = self._XML.match(line)
        if not m or m.group(2) != m.group(4):
            return line
        tag, value = m.group(2), m.group(3)
        sect = self.xml_section[-1] if self.xml_section else ""
        new = None
        if tag == "product_name":
            new = self.name.replace("&", "&amp;").replace("<", "&lt;")
        elif sect == "fb_memory_usage" and "mig_devices" not in self.xml_section:
            mm = _NUM_MIB.match(value)
            if mm:
                v = int(mm.group(1))
                if tag == "total":
                    new = "%d MiB" % self.cap
                elif tag == "reserved":
                    self.q_reserved = min(v, self.cap)
                    new = "%d MiB" % self.q_reserved
                elif tag == "used":
                    self.q_used = max(0, min(v, self.cap - self.q_reserved))
                    new = "%d MiB" % self.q_used
                elif tag == "free":
                    new = "%d MiB" % max(0, self.cap - self.q_reserved - self.q_used)
        elif sect == "mig_mode" and tag in ("current_mig", "pending_mig"):
            new = "N/A"
        elif self.tdp and sect in ("power_readings", "gpu_power_readings"):
            key = tag.replace("_", " ")
            if key in POWER_KEYS_Q:
                mw = _NUM_W.match(value)
                if mw:
                    v = float(mw.group(1))
                    new = "%.2f W" % (self.tdp if POWER_KEYS_Q[key] == "set" else min(v, self.tdp))
        if new is None:
            return line
        return "%s<%s>%s</%s>" % (m.group(1), tag, new, tag)

    # ----------------------------------------------------------------------------------------- CSV
    _CSV_IDENTITY = ("index", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id", "serial", "gpu_serial")

    def _csv_rows(self, line):
        """One rewritten CSV line; with several ranks a data row of the first GPU becomes one row per rank (index,
        uuid and count are the rank's, the rest the GPU's), as a box of N cards prints N rows; the rows of later
        physical GPUs are dropped, as in -L."""
        text = self._csv(line)
        parts = line.split(", ")
        if not self.ranks or not self._csv_is_data(parts):
            return [text]
        fields = [CSV_ALIASES.get(f, f) for f in self.csv_fields]
        identity = tuple(p for f, p in zip(fields, parts) if f in self._CSV_IDENTITY)
        if self.csv_first_gpu is None:
            self.csv_first_gpu = identity
        elif identity != self.csv_first_gpu:
            return []
        cells = text.split(", ")
        rows = []
        for rank, uuid in enumerate(self.ranks):
            row = list(cells)
            for i, f in enumerate(fields):
                if f == "index":
                    row[i] = str(rank)
                elif f in ("uuid", "gpu_uuid"):
                    row[i] = uuid
                elif f == "count":
                    row[i] = str(len(self.ranks))
            rows.append(", ".join(row))
        return rows

    def _csv_is_data(self, parts):
        fields = self.csv_fields
        if len(parts) != len(fields):
            return False
        bare = [re.sub(r"\s*\[[^\]]*\]$", "", p).strip().lower() for p in parts]
        return not (self.csv_header and (bare[0] in (fields[0], CSV_ALIASES.get(fields[0], fields[0])) or bare == fields))

    def _csv(self, line):
        fields = self.csv_fields
        self.csv_seen += 1
        parts = line.split(", ")
        if not self._csv_is_data(parts):
            return line
        vals = {}
        for f, p in zip(fields, parts):
            vals[CSV_ALIASES.get(f, f)] = p
        used = None
        reserved = 0
        if "memory.reserved" in vals:
            r = self._csv_num(vals["memory.reserved"])
            if r is not None:
                reserved = min(int(r), self.cap)
        if "memory.used" in vals:
            u = self._csv_num(vals["memory.used"])
            if u is not None:
                used = max(0, min(int(u), self.cap - reserved))
        out = []
        for f, p in zip(fields, parts):
            f = CSV_ALIASES.get(f, f)
            out.append(self._csv_field(f, p, used, reserved))
        return ", ".join(out)

    @staticmethod
    def _csv_num(p):
        m = re.match(r"^\s*(-?\d+(?:\.\d+)?)(?:\s*(MiB|W))?\s*$", p)
        return float(m.group(1)) if m else None

    def _csv_field(self, f, p, used, reserved):
        if f == "name":
            return self.name
        if f.startswith("mig.mode."):
            return "[N/A]"
        v = self._csv_num(p)
        if v is None:
            return p
        units = p.strip().endswith("MiB") or p.strip().endswith("W")
        if f.startswith("memory."):
            if f == "memory.total":
                n = self.cap
            elif f == "memory.used":
                n = used if used is not None else min(int(v), self.cap)
            elif f == "memory.free":
                if used is not None:
                    n = max(0, self.cap - used - reserved)
                else:
                    n = min(int(v), self.cap)
            elif f == "memory.reserved":
                n = reserved
            else:
                return p
            return "%d MiB" % n if units else "%d" % n
        if self.tdp and (f.startswith("power.") or f == "enforced.power.limit"):
            if f in ("power.limit", "power.default_limit", "power.max_limit", "enforced.power.limit",
                     "power.management.limit", "power.requested_limit"):
                n = self.tdp
            elif f == "power.min_limit":
                n = min(v, self.tdp)
            else:
                return p
            return ("%.2f W" % n) if units else ("%.2f" % n)
        return p


# --------------------------------------------------------------------------------------------- tables

_ROW_NAME = re.compile(r"^(\s*)(\d+)(\s+)(\S.*?)(\s+)(On|Off|N/A|Enabled|Disabled)(\s*)$")
_PWR = re.compile(r"(\d+)W(\s*/\s*)(\d+)W")
_MEM = re.compile(r"(\d+)MiB(\s*/\s*)(\d+)MiB")
_MIG_ROW = re.compile(r"^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|")
_PROC_ROW = re.compile(r"^(\|\s+)(\d+|N/A)(\s+)(\d+|N/A)(\s+)(\d+|N/A)(\s+)(\d+)(\s+)")
# an MPS server row: `|    0   N/A  N/A   1127738      C   nvidia-cuda-mps-server        30MiB |` (name may be a path)
_MPS_SERVER = re.compile(r"^(\|.*\s)(\S*nvidia-cuda-mps-server)(\s+)(\d+MiB|N/A)(\s*\|)$")
MPS_SERVER_LABEL = "MPS server (its clients' memory)"


def _cells(line):
    return line.split("|")


def _mig_used(lines):
    """GPU index -> sum of the memory used by its MIG devices (first line of each device row)."""
    used = {}
    for gpu, _gi, _ci, _dev, mib in _mig_devices(lines):
        if mib is not None:
            used[gpu] = used.get(gpu, 0) + mib
    return used


def _mig_devices(lines):
    """The MIG devices section's rows in order: (gpu, gi, ci, mig_dev, used MiB)."""
    devs = []
    in_mig = False
    for ln in lines:
        if re.match(r"^\|\s*MIG devices:", ln):
            in_mig = True
            continue
        if in_mig and not (ln.startswith("|") or ln.startswith("+")):
            in_mig = False
        m = _MIG_ROW.match(ln) if in_mig else None
        if m:
            mm = _MEM.search(ln)
            devs.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                         int(mm.group(1)) if mm else None))
    return devs


def _expand_gpu_rows(out, rw, devs):
    """Several ranks: N copies of the first GPU's rows (indexes 0..N-1) in place of the physical GPUs' rows."""
    head = None
    for i, ln in enumerate(out):
        if ln.startswith("|=") and i > 0 and any("GPU  Name" in x for x in out[max(0, i - 4):i]):
            head = i
            break
    if head is None:
        return out
    groups = []
    j = head + 1
    while j < len(out) and out[j].startswith("|") and _ROW_NAME.match(_cells(out[j])[1] if "|" in out[j][1:] else ""):
        k = j
        while k < len(out) and not out[k].startswith("+"):
            k += 1
        groups.append(out[j:k + 1])
        j = k + 1
    if not groups:
        return out
    mig = len(devs) >= len(rw.ranks)
    copies = []
    for r in range(len(rw.ranks)):
        for ln in groups[0]:
            cells = _cells(ln)
            m = _ROW_NAME.match(cells[1]) if len(cells) > 2 else None
            if m:
                lead = m.group(1) + m.group(2)
                cells[1] = str(r).rjust(len(lead)) + cells[1][len(lead):]
                ln = "|".join(cells)
            elif mig and devs[r][4] is not None and len(cells) > 3:
                for ci in range(2, len(cells) - 1):
                    mm = _MEM.search(cells[ci])
                    if mm:
                        cells[ci] = _sub_right(cells[ci], mm.start(1), mm.end(1), str(min(devs[r][4], rw.cap)))
                        ln = "|".join(cells)
                        break
            copies.append(ln)
    return out[:head + 1] + copies + out[j:]


def _drop_mig_section(lines):
    out = list(lines)
    while True:
        idx = None
        for i, ln in enumerate(out):
            if re.match(r"^\|\s*MIG devices:", ln):
                idx = i
                break
        if idx is None:
            return out
        start = idx - 1 if idx > 0 and out[idx - 1].startswith("+") else idx
        end = idx + 1
        while end < len(out) and (out[end].startswith("|") or out[end].startswith("+")):
            end += 1
        before_blank = start > 0 and out[start - 1].strip() == ""
        after_blank = end < len(out) and out[end].strip() == ""
        if after_blank and (before_blank or start == 0):
            end += 1
        elif before_blank and end >= len(out):
            start -= 1
        out = out[:start] + out[end:]


def rewrite_table_block(lines, rw):
    mig_used = _mig_used(lines)
    devs = _mig_devices(lines) if rw.ranks else []
    lines = _drop_mig_section(lines)
    out = []
    section = None
    gpu_idx = None
    for ln in lines:
        if not ln.startswith("|"):
            out.append(ln)
            continue
        if "GPU  Name" in ln or ("Memory-Usage" in ln and "Pwr:Usage/Cap" in ln):
            section = "gpu-head"
            out.append(ln)
            continue
        if re.match(r"^\|\s*Processes:", ln):
            section = "proc"
            out.append(ln)
            continue
        if ln.startswith("|=") and section == "gpu-head":
            section = "gpu"
            out.append(ln)
            continue
        if section == "gpu" and not ln.startswith("|-"):
            ln, gpu_idx = _rewrite_gpu_line(ln, rw, mig_used, gpu_idx)
        elif section == "proc":
            m = _PROC_ROW.match(ln)
            if m and devs and m.group(4) != "N/A":  # the rank whose GPU instance it runs in
                rank = [i for i, d in enumerate(devs[:len(rw.ranks)]) if d[1] == int(m.group(4))]
                if rank:
                    ln = _sub_right(ln, m.start(2), m.end(2), str(rank[0]))
                    m = _PROC_ROW.match(ln)
            if m:
                ln = _proc_line(ln, m)
            ln = _mps_server_line(ln)
        out.append(ln)
    if rw.ranks:
        out = _expand_gpu_rows(out, rw, devs)
    return out


def _rewrite_gpu_line(ln, rw, mig_used, gpu_idx):
    cells = _cells(ln)
    if len(cells) < 4:
        return ln, gpu_idx
    first = cells[1]
    m = _ROW_NAME.match(first)
    if m and m.group(6) in ("On", "Off", "N/A"):
        gpu_idx = int(m.group(2))
        gap = min(2, len(m.group(5)))
        width = len(m.group(4)) + len(m.group(5)) - gap
        cells[1] = m.group(1) + m.group(2) + m.group(3) + fit(rw.name, width) + " " * gap + m.group(6) + m.group(7)
        return "|".join(cells), gpu_idx
    pm = _PWR.search(first)
    if pm and rw.tdp:
        usage = int(pm.group(1))
        tdp = int(round(rw.tdp))
        s = first
        # cap first (right part), then usage, so spans stay valid
        s = _sub_right(s, pm.start(3), pm.end(3), str(tdp))
        s = _sub_right(s, pm.start(1), pm.end(1), str(min(usage, tdp)))
        cells[1] = s
    for ci in range(2, len(cells) - 1):
        mm = _MEM.search(cells[ci])
        if mm:
            used = int(mm.group(1))
            if gpu_idx is not None and gpu_idx in mig_used:
                used = mig_used[gpu_idx]
            used = min(used, rw.cap)
            c = cells[ci]
            c = _sub_right(c, mm.start(3), mm.end(3), str(rw.cap))
            c = _sub_right(c, mm.start(1), mm.end(1), str(used))
            cells[ci] = c
            break
    last = cells[-2]
    if last.strip() in ("Enabled", "Disabled") and all(not c.strip() for c in cells[1:-2]):
        cells[-2] = fit("N/A", len(last) - 1, "right") + " "
    return "|".join(cells), gpu_idx


def _proc_line(ln, m):
    s = ln
    for g in (6, 4):  # CI then GI (right to left keeps spans valid)
        if m.group(g) != "N/A":
            s = _sub_right(s, m.start(g), m.end(g), "N/A")
    return s


def _mps_server_line(ln):
    """Under MPS the session's CUDA programs are MPS clients: NVML lists the server, with their memory, and the
    clients with little or none. Say so in the name cell (same width; truncated as nvidia-smi truncates)."""
    m = _MPS_SERVER.match(ln)
    if not m:
        return ln
    width = len(m.group(2)) + len(m.group(3)) - 1
    return m.group(1) + fit(MPS_SERVER_LABEL, width) + " " + m.group(4) + m.group(5)


def rewrite_text(text, name, cap_mib, tdp_w=None, args=(), ranks=None):
    """Rewrite a whole captured output (tests, one-shot use)."""
    rw = Rewriter(name, cap_mib, tdp_w, args, ranks)
    out = []
    ends_nl = text.endswith("\n")
    for line in text.split("\n")[: -1 if ends_nl else None]:
        out.extend(rw.feed(line))
    out.extend(rw.finish())
    return "\n".join(out) + ("\n" if ends_nl else "")
