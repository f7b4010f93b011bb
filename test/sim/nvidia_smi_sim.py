"""nvidia-smi simulator for gpu-cosplay tests (standard library only, python >= 3.7); test/sim/nvidia-smi runs it.

State lives in the JSON file named by $GPU_COSPLAY_SIM_STATE. See test/sim/README.md.
Output layouts are modelled on the real captures in fixtures/nvidia-smi (R550 style).
"""
import fcntl
import json
import os
import sys
import time

# --------------------------------------------------------------------------------------------
# Host models
# --------------------------------------------------------------------------------------------

# profile tuple: (id, name, mem_slices, compute_slices, sm, mem_gib, ce, dec, enc, jpeg, ofa, max, starts, me)
P8_STARTS = {1: [0, 1, 2, 3, 4, 5, 6], 2: [0, 2, 4, 6], 4: [0, 4], 8: [0]}


def _p8(pid, name, slices, cslices, sm, mem, ce, dec, enc, jpeg, ofa, mx, starts=None, me=False, ci=None):
    return {
        "id": pid, "name": name, "size": slices, "cslices": cslices, "sm": sm, "mem": mem,
        "ce": ce, "dec": dec, "enc": enc, "jpeg": jpeg, "ofa": ofa, "max": mx,
        "starts": starts if starts is not None else P8_STARTS[slices], "me": me,
        "ci_default": ci,
    }


def _hopper_profiles(n1, m1, n2, m2, n3, m3, n7, m7):
    return [
        _p8(19, "1g." + n1, 1, 1, 16, m1, 1, 1, 0, 1, 0, 7, ci=0),
        _p8(20, "1g.%s+me" % n1, 1, 1, 16, m1, 1, 1, 0, 1, 1, 1, me=True, ci=0),
        _p8(15, "1g." + n2, 2, 1, 26, m2, 1, 1, 0, 1, 0, 4, ci=7),
        _p8(14, "2g." + n2, 2, 2, 32, m2, 2, 2, 0, 2, 0, 3, starts=[0, 2, 4], ci=1),
        _p8(9, "3g." + n3, 4, 3, 60, m3, 3, 3, 0, 3, 0, 2, ci=2),
        _p8(5, "4g." + n3, 4, 4, 64, m3, 4, 4, 0, 4, 0, 1, starts=[0], ci=3),
        _p8(0, "7g." + n7, 8, 7, 132, m7, 8, 7, 0, 7, 1, 1, ci=4),
    ]


GI_ID_8 = {1: {s: 7 + s for s in range(7)}, 2: {0: 3, 2: 4, 4: 5, 6: 6}, 4: {0: 1, 4: 2}, 8: {0: 0}}
GI_ID_4 = {1: {0: 3, 1: 4, 2: 5, 3: 6}, 2: {0: 1, 2: 2}, 4: {0: 0}}

HOPPER_BUSES = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]

MODELS = {
    "h200": {
        "name": "NVIDIA H200", "arch": "Hopper", "sm": 132, "mem_total": 143771, "mem_reserved": 700,
        "bar1": 262144, "power": (200.0, 700.0, 700.0), "clocks": (345, 1980), "mem_clock": 3201,
        "video_max": 1545, "device_id": "0x233510DE", "subsys": "0x18BE10DE", "buses": HOPPER_BUSES,
        "mem_slices": 8, "gi_ids": GI_ID_8, "idle_w": 74,
        "profiles": _hopper_profiles("18gb", 16.00, "35gb", 32.25, "71gb", 69.50, "141gb", 139.75),
    },
    "h100-sxm": {
        "name": "NVIDIA H100 80GB HBM3", "arch": "Hopper", "sm": 132, "mem_total": 81559, "mem_reserved": 579,
        "bar1": 131072, "power": (200.0, 700.0, 700.0), "clocks": (345, 1980), "mem_clock": 2619,
        "video_max": 1755, "device_id": "0x233010DE", "subsys": "0x16C110DE", "buses": HOPPER_BUSES,
        "mem_slices": 8, "gi_ids": GI_ID_8, "idle_w": 70,
        "profiles": _hopper_profiles("10gb", 9.75, "20gb", 19.62, "40gb", 39.50, "80gb", 79.25),
    },
    "a100-80g": {
        "name": "NVIDIA A100-SXM4-80GB", "arch": "Ampere", "sm": 108, "mem_total": 81920, "mem_reserved": 763,
        "bar1": 131072, "power": (100.0, 400.0, 400.0), "clocks": (210, 1410), "mem_clock": 1593,
        "video_max": 1290, "device_id": "0x20B210DE", "subsys": "0x147F10DE",
        "buses": ["07", "0F", "47", "4E", "87", "90", "B7", "BD"],
        "mem_slices": 8, "gi_ids": GI_ID_8, "idle_w": 60,
        "profiles": [
            _p8(19, "1g.10gb", 1, 1, 14, 9.50, 1, 0, 0, 0, 0, 7, ci=0),
            _p8(20, "1g.10gb+me", 1, 1, 14, 9.50, 1, 1, 0, 1, 1, 1, me=True, ci=0),
            _p8(15, "1g.20gb", 2, 1, 14, 19.50, 1, 1, 0, 0, 0, 4, ci=0),
            _p8(14, "2g.20gb", 2, 2, 28, 19.50, 2, 1, 0, 0, 0, 3, starts=[0, 2, 4], ci=1),
            _p8(9, "3g.40gb", 4, 3, 42, 39.25, 3, 2, 0, 0, 0, 2, ci=2),
            _p8(5, "4g.40gb", 4, 4, 56, 39.25, 4, 2, 0, 0, 0, 1, starts=[0], ci=3),
            _p8(0, "7g.80gb", 8, 7, 98, 79.00, 7, 5, 0, 1, 1, 1, ci=4),
        ],
    },
    "a30": {
        "name": "NVIDIA A30", "arch": "Ampere", "sm": 56, "mem_total": 24576, "mem_reserved": 318,
        "bar1": 32768, "power": (100.0, 165.0, 165.0), "clocks": (210, 1440), "mem_clock": 1215,
        "video_max": 1305, "device_id": "0x20B710DE", "subsys": "0x153210DE",
        "buses": ["17", "31", "B1", "CA", "18", "32", "B2", "CB"],
        "mem_slices": 4, "gi_ids": GI_ID_4, "idle_w": 30,
        "profiles": [
            _p8(14, "1g.6gb", 1, 1, 14, 5.81, 1, 1, 0, 0, 0, 4, starts=[0, 1, 2, 3], ci=0),
            _p8(21, "1g.6gb+me", 1, 1, 14, 5.81, 1, 1, 0, 1, 1, 1, starts=[0, 1, 2, 3], me=True, ci=0),
            _p8(5, "2g.12gb", 2, 2, 28, 11.69, 2, 2, 0, 0, 0, 2, starts=[0, 2], ci=1),
            _p8(6, "2g.12gb+me", 2, 2, 28, 11.69, 2, 2, 0, 1, 1, 1, starts=[0, 2], me=True, ci=1),
            _p8(0, "4g.24gb", 4, 4, 56, 23.50, 4, 4, 0, 1, 1, 1, starts=[0], ci=3),
        ],
    },
    "l40s": {
        "name": "NVIDIA L40S", "arch": "Ada Lovelace", "sm": 142, "mem_total": 46068, "mem_reserved": 588,
        "bar1": 65536, "power": (100.0, 350.0, 350.0), "clocks": (210, 2520), "mem_clock": 9001,
        "video_max": 1965, "device_id": "0x26B910DE", "subsys": "0x185110DE",
        "buses": ["01", "21", "41", "61", "81", "A1", "C1", "E1"],
        "mem_slices": 0, "gi_ids": {}, "idle_w": 35, "profiles": [],
    },
}

# compute-instance profile id -> compute slices (NVML numbering)
CI_SLICES = {0: 1, 1: 2, 2: 3, 3: 4, 4: 7, 5: 8, 6: 6, 7: 1}

EXIT_OK, EXIT_INVALID, EXIT_NOT_SUPPORTED, EXIT_NO_PERM, EXIT_NOT_FOUND, EXIT_IN_USE = 0, 2, 3, 4, 6, 255

INVALID_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."
TERMINATING = "Terminating early due to previous errors."
PM_WARNING = ("Warning: persistence mode is disabled on device %s. See the Known Issues section of the "
              "nvidia-smi(1) man page for more information. Run with [--help | -h] switch to get more "
              "information on how to enable persistence mode.")


class SimExit(Exception):
    def __init__(self, code, out="", err=""):
        Exception.__init__(self, code)
        self.code, self.out, self.err = code, out, err


def cuda_for(driver):
    major = int(driver.split(".")[0])
    table = [(580, "13.0"), (575, "12.9"), (570, "12.8"), (565, "12.7"), (560, "12.6"), (555, "12.5"),
             (550, "12.4"), (545, "12.3"), (535, "12.2"), (530, "12.1"), (525, "12.0"), (520, "11.8")]
    for m, c in table:
        if major >= m:
            return c
    return "11.7"


def rand_uuid(prefix, version="5"):
    h = os.urandom(16).hex()
    return "%s-%s-%s-%s%s-%s-%s" % (prefix, h[0:8], h[8:12], version, h[13:16], h[16:20], h[20:32])


# --------------------------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------------------------

def state_path():
    p = os.environ.get("GPU_COSPLAY_SIM_STATE")
    if not p:
        sys.stderr.write("nvidia-smi simulator: GPU_COSPLAY_SIM_STATE is not set "
                         "(point it at a state file and run --sim-init first)\n")
        sys.exit(2)
    return p


def new_state(model, ngpus, driver):
    m = MODELS[model]
    gpus = []
    for i in range(ngpus):
        bus = m["buses"][i % len(m["buses"])] if i < len(m["buses"]) else "%02X" % (0x10 + i)
        gpus.append({
            "index": i, "uuid": rand_uuid("GPU", format(os.urandom(1)[0] & 15, "x")),
            "bus_id": "00000000:%s:00.0" % bus, "serial": "17537240%05d" % (31847 + i),
            "persistence": True, "mig_current": False, "mig_pending": False,
            "power_limit": m["power"][2], "clocks_locked": None,
            "gis": [], "processes": [], "next_dev_seq": 0,
        })
    return {
        "version": 1, "model": model, "driver": driver, "cuda": cuda_for(driver), "gpus": gpus,
        "require_root": False, "mig_needs_reset": False, "faults": [], "garbage": False,
        "device_order": "creation",
    }


class Store:
    def __init__(self, path):
        self.path = path
        self.lock_fd = None

    def lock(self):
        self.lock_fd = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)

    def unlock(self):
        if self.lock_fd is not None:
            fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
            os.close(self.lock_fd)
            self.lock_fd = None

    def load(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            sys.stderr.write("nvidia-smi simulator: state file %s does not exist; run "
                             "'nvidia-smi --sim-init --model h200 --gpus 8' first\n" % self.path)
            sys.exit(2)

    def save(self, st):
        tmp = "%s.tmp.%d" % (self.path, os.getpid())
        with open(tmp, "w") as f:
            json.dump(st, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def log_lines(self):
        try:
            with open(self.path + ".calls.log") as f:
                return [json.loads(l) for l in f if l.strip()]
        except FileNotFoundError:
            return []

    def log(self, argv, exit_code, extra=None):
        rec = {"argv": argv, "t": round(time.time(), 6), "exit": exit_code, "pid": os.getpid()}
        if extra:
            rec.update(extra)
        with open(self.path + ".calls.log", "a") as f:
            f.write(json.dumps(rec) + "\n")


# --------------------------------------------------------------------------------------------
# MIG geometry
# --------------------------------------------------------------------------------------------

def profiles(st):
    return MODELS[st["model"]]["profiles"]


def model(st):
    return MODELS[st["model"]]


def name_of(st, g):
    """The product name a GPU reports: its model's, unless the state gives it its own ("gpus.N.name"), which makes
    a box with a GPU of a model the tool does not know."""
    return g.get("name") or model(st)["name"]


def prof_by_id(st, pid):
    for p in profiles(st):
        if p["id"] == pid:
            return p
    return None


def resolve_profile(st, token):
    t = token.strip()
    if t.isdigit():
        return prof_by_id(st, int(t))
    name = t[4:] if t.upper().startswith("MIG ") else t
    for p in profiles(st):
        if p["name"] == name:
            return p
    return None


def used_slots(gpu):
    used = set()
    for gi in gpu["gis"]:
        used.update(range(gi["start"], gi["start"] + gi["size"]))
    return used


def fits(p, start, used):
    return not any(s in used for s in range(start, start + p["size"]))


def me_in_use(st, gpu):
    for gi in gpu["gis"]:
        p = prof_by_id(st, gi["profile_id"])
        if p and p["me"]:
            return True
    return False


def free_count(st, gpu, p):
    if p["me"] and me_in_use(st, gpu):
        return 0
    used = set(used_slots(gpu))
    n = 0
    for s in p["starts"]:
        if fits(p, s, used):
            used.update(range(s, s + p["size"]))
            n += 1
    return min(n, p["max"])


def available_placements(st, used):
    n = 0
    for q in profiles(st):
        for s in q["starts"]:
            if fits(q, s, used):
                n += 1
    return n


def choose_start(st, gpu, p):
    """Placement the driver picks: the one that blocks the fewest other placements (lowest start on ties).
    Reproduces the real order 6,4,5,0,1,2,3 for seven 1g instances, 3g at 4:4 then 2g at 0:2."""
    if p["me"] and me_in_use(st, gpu):
        return None
    used = used_slots(gpu)
    best = None
    for s in p["starts"]:
        if not fits(p, s, used):
            continue
        after = set(used) | set(range(s, s + p["size"]))
        score = available_placements(st, after)
        if best is None or score > best[0]:
            best = (score, s)
    return None if best is None else best[1]


def gi_id_for(st, size, start):
    return model(st)["gi_ids"][size][start]


def ci_profile_name(gp, ci_pid):
    cs = CI_SLICES.get(ci_pid, 1)
    base = gp["name"]
    if base.endswith("+me"):
        base = base[:-3]
    if cs >= gp["cslices"]:
        return gp["name"]
    return "%dc.%s" % (cs, base)


def ci_profile_ids_for(gp):
    """CI profiles a GI accepts: 1, 2, 3 (only in 3g), 4 and 7 compute slices up to the GI size."""
    c = gp["cslices"]
    ids = [7 if gp["ci_default"] == 7 else 0]
    if c >= 2:
        ids.append(1)
    if c == 3 or c == 7:
        ids.append(2)
    if c >= 4:
        ids.append(3)
    if c == 7:
        ids.append(4)
    return ids


def resolve_ci_profile(gp, token):
    t = token.strip()
    if t.isdigit():
        cid = int(t)
        return cid if cid in ci_profile_ids_for(gp) else None
    name = t[4:] if t.upper().startswith("MIG ") else t
    for cid in ci_profile_ids_for(gp):
        if ci_profile_name(gp, cid) == name:
            return cid
    return None


def ci_start(gi, size, gp):
    used = set()
    for ci in gi["cis"]:
        used.update(range(ci["start"], ci["start"] + ci["size"]))
    if size == gp["cslices"]:
        return 0 if not used else None
    for s in range(0, gp["cslices"] - size + 1, size):
        if not any(x in used for x in range(s, s + size)):
            return s
    return None


def all_devices(gpu):
    devs = []
    for gi in gpu["gis"]:
        for ci in gi["cis"]:
            devs.append((gi, ci))
    return devs


def device_list(st, gpu):
    """MIG devices in device-index order: creation order (default) or GI/CI id order."""
    devs = all_devices(gpu)
    if st.get("device_order") == "gi":
        devs.sort(key=lambda d: (d[0]["id"], d[1]["id"]))
    else:
        devs.sort(key=lambda d: d[1]["seq"])
    return devs


def dev_index_map(st, gpu):
    return {(gi["id"], ci["id"]): i for i, (gi, ci) in enumerate(device_list(st, gpu))}


# --------------------------------------------------------------------------------------------
# Rendering helpers
# --------------------------------------------------------------------------------------------

def mib_used(st, gpu):
    used = sum(int(p.get("used_mib", 0)) for p in gpu["processes"])
    if gpu["mig_current"]:
        return used + 13 * len(gpu["gis"])
    return used + 1


def gi_mem_mib(gp):
    return int(round(gp["mem"] * 1024))


def power_draw(st, gpu):
    base = model(st)["idle_w"]
    if any(gpu["processes"]):
        base += 150
    return min(base, int(gpu["power_limit"]))


def current_gfx_clock(st, gpu):
    lo, hi = model(st)["clocks"]
    if gpu["clocks_locked"]:
        v = gpu["clocks_locked"][1]
        try:
            return max(lo, min(hi, int(v)))
        except (TypeError, ValueError):
            return hi
    return lo


def trunc(s, n):
    return s if len(s) <= n else s[:n - 3] + "..."


def default_table(st, gpus):
    m = model(st)
    drv, cuda = st["driver"], st["cuda"]
    L = [time.strftime("%a %b %d %H:%M:%S %Y")]
    L.append("+" + "-" * 89 + "+")
    L.append("| NVIDIA-SMI %-23sDriver Version: %-15sCUDA Version: %-9s|" % (drv, drv, cuda))
    L.append("|-----------------------------------------+------------------------+----------------------+")
    L.append("| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |")
    L.append("| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |")
    L.append("|                                         |                        |               MIG M. |")
    L.append("|=========================================+========================+======================|")
    sep = "+-----------------------------------------+------------------------+----------------------+"
    for g in gpus:
        mig_supported = bool(m["profiles"])
        pm = "On" if g["persistence"] else "Off"
        ecc = "On" if g["mig_current"] else "0"
        L.append("| %3d  %-31s%-4s|   %s Off | %20s |" % (g["index"], trunc(name_of(st, g), 31), pm, g["bus_id"], ecc))
        pwr = "%dW / %4dW" % (power_draw(st, g), int(round(g["power_limit"])))
        mem = "%dMiB / %6dMiB" % (mib_used(st, g), m["mem_total"])
        util = "N/A" if g["mig_current"] else "0%"
        L.append("| N/A   28C    P0  %22s | %22s | %7s      Default |" % (pwr, mem, util))
        migm = ("Enabled" if g["mig_current"] else "Disabled") if mig_supported else "N/A"
        L.append("|                                         |                        | %20s |" % migm)
        L.append(sep)
    if any(g["mig_current"] for g in gpus):
        L.append(" " * 89)
        L.append("+" + "-" * 89 + "+")
        L.append("| MIG devices:" + " " * 76 + "|")
        L.append("+------------------+----------------------------------+-----------+-----------------------+")
        L.append("| GPU  GI  CI  MIG |              Shared Memory-Usage |        Vol|        Shared         |")
        L.append("|      ID  ID  Dev |                Shared BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |")
        L.append("|                  |                                  |        ECC|                       |")
        L.append("|==================+==================================+===========+=======================|")
        msep = "+------------------+----------------------------------+-----------+-----------------------+"
        rows = 0
        for g in gpus:
            if not g["mig_current"]:
                continue
            idx = dev_index_map(st, g)
            for gi in sorted(g["gis"], key=lambda x: x["id"]):
                gp = prof_by_id(st, gi["profile_id"])
                for ci in sorted(gi["cis"], key=lambda x: x["id"]):
                    sm = int(gp["sm"] * CI_SLICES.get(ci["profile_id"], 1) / gp["cslices"]) \
                        if CI_SLICES.get(ci["profile_id"], 1) < gp["cslices"] else gp["sm"]
                    memu = "%dMiB / %dMiB" % (13, gi_mem_mib(gp))
                    bar1 = "%dMiB / %dMiB" % (0, int(m["bar1"] * gp["size"] / m["mem_slices"]) // 2)
                    L.append("| %2d  %3d %3d %3d  | %29s    | %2d      0 | %2d %3d  %3d  %3d  %3d |" % (
                        g["index"], gi["id"], ci["id"], idx[(gi["id"], ci["id"])], memu, sm,
                        gp["ce"], gp["enc"], gp["dec"], gp["ofa"], gp["jpeg"]))
                    L.append("|                  | %29s    |           |                       |" % bar1)
                    L.append(msep)
                    rows += 1
        if rows == 0:
            L.append("|  No MIG devices found" + " " * 67 + "|")
            L.append("+" + "-" * 89 + "+")
    L.append(" " * 89)
    L.append("+" + "-" * 89 + "+")
    L.append("| Processes:" + " " * 78 + "|")
    L.append("|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |")
    L.append("|        ID   ID                                                               Usage      |")
    L.append("|" + "=" * 89 + "|")
    procs = [(g, p) for g in gpus for p in g["processes"]]
    if not procs:
        L.append("|  No running processes found" + " " * 61 + "|")
    for g, p in procs:
        gi = "N/A" if p.get("gi") is None else str(p["gi"])
        ci = "N/A" if p.get("ci") is None else str(p["ci"])
        name = p.get("name", "python3")
        if len(name) > 38:
            name = "..." + name[-35:]
        L.append("|%5d%6s%5s%9d%7s   %-38s%15s |" % (g["index"], gi, ci, int(p.get("pid", 0)),
                                                     p.get("type", "C"), name, "%dMiB" % int(p.get("used_mib", 0))))
    L.append("+" + "-" * 89 + "+")
    return "\n".join(L) + "\n"


def lgip(st, gpus):
    L = []
    top = "+" + "-" * 79 + "+"
    L.append(top)
    L.append("| GPU instance profiles:" + " " * 56 + "|")
    L.append("| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC  |")
    L.append("|                                Free/Total   GiB              CE    JPEG  OFA  |")
    L.append("|" + "=" * 79 + "|")
    for g in gpus:
        for p in profiles(st):
            ft = "%d/%d" % (free_count(st, g, p), p["max"])
            L.append("|%4d  %-18s%4d     %-11s%-11s%-7s%-7s%-6s%-4s|" % (
                g["index"], "MIG " + p["name"], p["id"], ft, "%.2f" % p["mem"], "No", p["sm"], p["dec"], p["enc"]))
            L.append("|" + " " * 63 + "%-6s%-6s%-4s|" % (p["ce"], p["jpeg"], p["ofa"]))
            L.append(top)
    return "\n".join(L) + "\n"


def lgipp(st, gpus):
    L = []
    for g in gpus:
        for p in profiles(st):
            starts = ",".join(str(s) for s in p["starts"])
            word = "Placements:" if len(p["starts"]) > 1 else "Placement :"
            L.append("GPU %2d Profile ID %2d %s {%s}:%d" % (g["index"], p["id"], word, starts, p["size"]))
    return "\n".join(L) + "\n"


def gi_list_key(gi):
    """-lgi/-lci list order seen in every capture: profile ID descending, then GI ID."""
    return (-gi["profile_id"], gi["id"])


def lgi(st, gpus):
    rows = []
    for g in gpus:
        for gi in sorted(g["gis"], key=gi_list_key):
            p = prof_by_id(st, gi["profile_id"])
            rows.append("|%4d  %-16s%6d%9d          %-8s|" % (
                g["index"], "MIG " + p["name"], p["id"], gi["id"], "%d:%d" % (gi["start"], gi["size"])))
    if not rows:
        return None
    top = "+" + "-" * 55 + "+"
    L = [top, "| GPU instances:" + " " * 40 + "|",
         "| GPU   Name             Profile  Instance   Placement  |",
         "|                          ID       ID       Start:Size |",
         "|" + "=" * 55 + "|"]
    for r in rows:
        L.append(r)
        L.append(top)
    return "\n".join(L) + "\n"


def lci(st, gpus, gi_filter=None, ci_filter=None):
    rows = []
    for g in gpus:
        for gi in sorted(g["gis"], key=gi_list_key):
            if gi_filter is not None and gi["id"] not in gi_filter:
                continue
            gp = prof_by_id(st, gi["profile_id"])
            for ci in sorted(gi["cis"], key=lambda x: x["id"]):
                if ci_filter is not None and ci["id"] not in ci_filter:
                    continue
                rows.append("|%4d%7d       %-17s%5d%10d          %-8s|" % (
                    g["index"], gi["id"], "MIG " + ci_profile_name(gp, ci["profile_id"]), ci["profile_id"],
                    ci["id"], "%d:%d" % (ci["start"], ci["size"])))
    if not rows:
        return None
    top = "+" + "-" * 68 + "+"
    L = [top, "| Compute instances:" + " " * 49 + "|",
         "| GPU     GPU       Name             Profile   Instance   Placement  |",
         "|       Instance                       ID        ID       Start:Size |",
         "|         ID                                                         |",
         "|" + "=" * 68 + "|"]
    for r in rows:
        L.append(r)
        L.append(top)
    return "\n".join(L) + "\n"


def list_gpus(st, gpus):
    m = model(st)
    L = []
    for g in gpus:
        L.append("GPU %d: %s (UUID: %s)" % (g["index"], name_of(st, g), g["uuid"]))
        if g["mig_current"]:
            for i, (gi, ci) in enumerate(device_list(st, g)):
                gp = prof_by_id(st, gi["profile_id"])
                L.append("  MIG %-11s Device %2d: (UUID: %s)" % (ci_profile_name(gp, ci["profile_id"]), i, ci["uuid"]))
    return "\n".join(L) + "\n"


def kv(indent, key, val=None):
    pad = " " * (4 * indent)
    if val is None:
        return pad + key
    return "%s%-*s: %s" % (pad, 42 - 4 * indent, key, val)


Q_TEMPLATE = """\
    Product Name                          : NVIDIA H200
    Product Brand                         : NVIDIA
    Product Architecture                  : Hopper
    Display Mode                          : Disabled
    Display Active                        : Disabled
    Persistence Mode                      : Enabled
    Addressing Mode                       : None
    MIG Mode
        Current                           : Disabled
        Pending                           : Disabled
    Accounting Mode                       : Disabled
    Accounting Mode Buffer Size           : 4000
    Driver Model
        Current                           : N/A
        Pending                           : N/A
    Serial Number                         : 1753724031847
    GPU UUID                              : GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732
    Minor Number                          : 0
    VBIOS Version                         : 96.00.A5.00.03
    MultiGPU Board                        : No
    Board ID                              : 0x300
    Board Part Number                     : 695-2G520-0280-000
    GPU Part Number                       : 2335-895-A1
    FRU Part Number                       : N/A
    Module ID                             : 3
    Inforom Version
        Image Version                     : G520.0280.02.02
        OEM Object                        : 2.1
        ECC Object                        : 7.16
        Power Management Object           : N/A
    Inforom BBX Object Flush
        Latest Timestamp                  : N/A
        Latest Duration                   : N/A
    GPU Operation Mode
        Current                           : N/A
        Pending                           : N/A
    GPU C2C Mode                          : Disabled
    GPU Virtualization Mode
        Virtualization Mode               : Pass-Through
        Host VGPU Mode                    : N/A
        vGPU Heterogeneous Mode           : N/A
    GPU Reset Status
        Reset Required                    : No
        Drain and Reset Recommended       : No
    GSP Firmware Version                  : 550.90.12
    IBMNPU
        Relaxed Ordering Mode             : N/A
    PCI
        Bus                               : 0x03
        Device                            : 0x00
        Domain                            : 0x0000
        Base Classcode                    : 0x3
        Sub Classcode                     : 0x2
        Device Id                         : 0x233510DE
        Bus Id                            : 00000000:03:00.0
        Sub System Id                     : 0x18BE10DE
        GPU Link Info
            PCIe Generation
                Max                       : 5
                Current                   : 5
                Device Current            : 5
                Device Max                : 5
                Host Max                  : N/A
            Link Width
                Max                       : 16x
                Current                   : 16x
        Bridge Chip
            Type                          : N/A
            Firmware                      : N/A
        Replays Since Reset               : 0
        Replay Number Rollovers           : 0
        Tx Throughput                     : 657 KB/s
        Rx Throughput                     : 619 KB/s
        Atomic Caps Inbound               : N/A
        Atomic Caps Outbound              : N/A
    Fan Speed                             : N/A
    Performance State                     : P0
    Clocks Event Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    Sparse Operation Mode                 : Disabled
    FB Memory Usage
        Total                             : 143771 MiB
        Reserved                          : 700 MiB
        Used                              : 1 MiB
        Free                              : 143072 MiB
    BAR1 Memory Usage
        Total                             : 262144 MiB
        Used                              : 1 MiB
        Free                              : 262143 MiB
    Conf Compute Protected Memory Usage
        Total                             : 0 MiB
        Used                              : 0 MiB
        Free                              : 0 MiB
    Compute Mode                          : Default
    Utilization
        Gpu                               : 0 %
        Memory                            : 0 %
        Encoder                           : 0 %
        Decoder                           : 0 %
        JPEG                              : 0 %
        OFA                               : 0 %
    Encoder Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    FBC Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
            SRAM Threshold Exceeded       : No
        Aggregate Uncorrectable SRAM Sources
            SRAM L2                       : 0
            SRAM SM                       : 0
            SRAM Microcontroller          : 0
            SRAM PCIE                     : 0
            SRAM Other                    : 0
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 0
        Pending                           : No
        Remapping Failure Occurred        : No
        Bank Remap Availability Histogram
            Max                           : 3072 bank(s)
            High                          : 0 bank(s)
            Partial                       : 0 bank(s)
            Low                           : 0 bank(s)
            None                          : 0 bank(s)
    Temperature
        GPU Current Temp                  : 28 C
        GPU T.Limit Temp                  : 59 C
        GPU Shutdown T.Limit Temp         : -8 C
        GPU Slowdown T.Limit Temp         : -2 C
        GPU Max Operating T.Limit Temp    : 0 C
        GPU Target Temperature            : N/A
        Memory Current Temp               : 25 C
        Memory Max Operating T.Limit Temp : 0 C
    GPU Power Readings
        Power Draw                        : 74.58 W
        Current Power Limit               : 700.00 W
        Requested Power Limit             : 700.00 W
        Default Power Limit               : 700.00 W
        Min Power Limit                   : 200.00 W
        Max Power Limit                   : 700.00 W
    GPU Memory Power Readings 
        Power Draw                        : 41.76 W
    Module Power Readings
        Power Draw                        : N/A
        Current Power Limit               : N/A
        Requested Power Limit             : N/A
        Default Power Limit               : N/A
        Min Power Limit                   : N/A
        Max Power Limit                   : N/A
    Clocks
        Graphics                          : 345 MHz
        SM                                : 345 MHz
        Memory                            : 3199 MHz
        Video                             : 765 MHz
    Applications Clocks
        Graphics                          : 1980 MHz
        Memory                            : 3201 MHz
    Default Applications Clocks
        Graphics                          : 1980 MHz
        Memory                            : 3201 MHz
    Deferred Clocks
        Memory                            : N/A
    Max Clocks
        Graphics                          : 1980 MHz
        SM                                : 1980 MHz
        Memory                            : 3201 MHz
        Video                             : 1545 MHz
    Max Customer Boost Clocks
        Graphics                          : 1980 MHz
    Clock Policy
        Auto Boost                        : N/A
        Auto Boost Default                : N/A
    Voltage
        Graphics                          : 685.000 mV
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 0
        ClusterUUID                       : 00000000-0000-0000-0000-000000000000
        Health
            Bandwidth                     : N/A
    Processes                             : None
"""


def query_block(st, g):
    """-q block for one GPU: the real H200 R550 capture used as a template, dynamic values substituted."""
    m = model(st)
    mig_supported = bool(m["profiles"])
    lo, hi = m["clocks"]
    bus = g["bus_id"]
    dom, b = bus.split(":")[0], bus.split(":")[1]
    used = mib_used(st, g)
    total, res = m["mem_total"], m["mem_reserved"]
    en = lambda v: "Enabled" if v else "Disabled"
    cur = current_gfx_clock(st, g)
    util = "N/A" if g["mig_current"] else "0 %"
    ov = {
        "Product Name": name_of(st, g), "Product Architecture": m["arch"],
        "Persistence Mode": en(g["persistence"]),
        "MIG Mode/Current": en(g["mig_current"]) if mig_supported else "N/A",
        "MIG Mode/Pending": en(g["mig_pending"]) if mig_supported else "N/A",
        "Serial Number": g.get("serial", "1753724031847"), "GPU UUID": g["uuid"],
        "Minor Number": str(g["index"]), "Module ID": str(g["index"] + 1),
        "GSP Firmware Version": st["driver"],
        "PCI/Bus": "0x" + b, "PCI/Domain": "0x" + dom[-4:], "PCI/Device Id": m["device_id"],
        "PCI/Bus Id": bus, "PCI/Sub System Id": m["subsys"],
        "Clocks Event Reasons/Idle": "Not Active" if (g["processes"] or g["clocks_locked"]) else "Active",
        "FB Memory Usage/Total": "%d MiB" % total, "FB Memory Usage/Reserved": "%d MiB" % res,
        "FB Memory Usage/Used": "%d MiB" % used, "FB Memory Usage/Free": "%d MiB" % (total - res - used),
        "BAR1 Memory Usage/Total": "%d MiB" % m["bar1"], "BAR1 Memory Usage/Free": "%d MiB" % (m["bar1"] - 1),
        "Utilization/Gpu": util, "Utilization/Memory": util, "Utilization/Encoder": util,
        "Utilization/Decoder": util, "Utilization/JPEG": util, "Utilization/OFA": util,
        "GPU Power Readings/Power Draw": "%.2f W" % (power_draw(st, g) + 0.58),
        "GPU Power Readings/Current Power Limit": "%.2f W" % g["power_limit"],
        "GPU Power Readings/Requested Power Limit": "%.2f W" % g["power_limit"],
        "GPU Power Readings/Default Power Limit": "%.2f W" % m["power"][2],
        "GPU Power Readings/Min Power Limit": "%.2f W" % m["power"][0],
        "GPU Power Readings/Max Power Limit": "%.2f W" % m["power"][1],
        "Clocks/Graphics": "%d MHz" % cur, "Clocks/SM": "%d MHz" % cur,
        "Clocks/Memory": "%d MHz" % (m["mem_clock"] - 2),
        "Applications Clocks/Graphics": "%d MHz" % hi, "Applications Clocks/Memory": "%d MHz" % m["mem_clock"],
        "Default Applications Clocks/Graphics": "%d MHz" % hi,
        "Default Applications Clocks/Memory": "%d MHz" % m["mem_clock"],
        "Max Clocks/Graphics": "%d MHz" % hi, "Max Clocks/SM": "%d MHz" % hi,
        "Max Clocks/Memory": "%d MHz" % m["mem_clock"], "Max Clocks/Video": "%d MHz" % m["video_max"],
        "Max Customer Boost Clocks/Graphics": "%d MHz" % hi,
    }
    L = ["GPU " + bus]
    stack = []
    for line in Q_TEMPLATE.split("\n"):
        if not line:
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 4
        key, sep, _ = line.strip().partition(":")
        key = key.strip()
        stack = stack[:depth - 1] + [key]
        path = "/".join(stack)
        if sep and path in ov:
            line = line[:line.index(":") + 1] + " " + ov[path]
        if path == "Processes":
            L.extend(process_lines(g))
            continue
        L.append(line)
        if path == "MIG Mode/Pending" and g["mig_current"]:
            L.extend(mig_device_lines(st, g))
    return L


def process_lines(g):
    if not g["processes"]:
        return [kv(1, "Processes", "None")]
    L = [kv(1, "Processes")]
    for p in g["processes"]:
        L.append(kv(2, "GPU instance ID", "N/A" if p.get("gi") is None else str(p["gi"])))
        L.append(kv(2, "Compute instance ID", "N/A" if p.get("ci") is None else str(p["ci"])))
        L.append(kv(2, "Process ID", str(int(p.get("pid", 0)))))
        L.append(kv(3, "Type", p.get("type", "C")))
        L.append(kv(3, "Name", p.get("name", "python3")))
        L.append(kv(3, "Used GPU Memory", "%d MiB" % int(p.get("used_mib", 0))))
    return L


def mig_device_lines(st, g):
    m = model(st)
    devs = device_list(st, g)
    if not devs:
        return [kv(1, "MIG Devices", "None")]
    L = [kv(1, "MIG Devices")]
    a = L.append
    for i, (gi, ci) in enumerate(devs):
        gp = prof_by_id(st, gi["profile_id"])
        cs = CI_SLICES.get(ci["profile_id"], 1)
        sm = gp["sm"] if cs >= gp["cslices"] else int(gp["sm"] * cs / gp["cslices"])
        gmem = gi_mem_mib(gp)
        a(kv(2, "MIG Device"))
        a(kv(3, "Index", str(i)))
        a(kv(3, "GPU Instance ID", str(gi["id"])))
        a(kv(3, "Compute Instance ID", str(ci["id"])))
        a(kv(3, "Device Attributes"))
        a(kv(4, "Shared"))
        a(kv(5, "Multiprocessor count", str(sm)))
        a(kv(5, "Copy Engine count", str(gp["ce"])))
        a(kv(5, "Encoder count", str(gp["enc"])))
        a(kv(5, "Decoder count", str(gp["dec"])))
        a(kv(5, "OFA count", str(gp["ofa"])))
        a(kv(5, "JPG count", str(gp["jpeg"])))
        a(kv(3, "ECC Errors"))
        a(kv(4, "Volatile"))
        a(kv(5, "SRAM Uncorrectable", "0"))
        a(kv(3, "FB Memory Usage"))
        a(kv(4, "Total", "%d MiB" % gmem))
        a(kv(4, "Reserved", "0 MiB"))
        a(kv(4, "Used", "13 MiB"))
        a(kv(4, "Free", "%d MiB" % (gmem - 13)))
        a(kv(3, "BAR1 Memory Usage"))
        a(kv(4, "Total", "%d MiB" % (m["bar1"] // 8)))
        a(kv(4, "Used", "0 MiB"))
        a(kv(4, "Free", "%d MiB" % (m["bar1"] // 8)))
    return L


def query_all(st, gpus):
    L = ["", "==============NVSMI LOG==============", "",
         kv(0, "Timestamp", time.strftime("%a %b %d %H:%M:%S %Y")),
         kv(0, "Driver Version", st["driver"]),
         kv(0, "CUDA Version", st["cuda"]), "",
         kv(0, "Attached GPUs", str(len(st["gpus"])))]
    for i, g in enumerate(gpus):
        if i:
            L.append("")
        L.extend(query_block(st, g))
    return "\n".join(L) + "\n\n"


QUERY_FIELDS = ["index", "name", "uuid", "pci.bus_id", "driver_version", "memory.total", "memory.used",
                "memory.free", "power.limit", "enforced.power.limit", "power.default_limit",
                "power.min_limit", "power.max_limit", "clocks.max.graphics", "clocks.max.gr",
                "persistence_mode", "mig.mode.current", "mig.mode.pending", "count", "power.draw",
                "clocks.gr", "clocks.current.graphics", "gpu_name", "gpu_uuid", "gpu_bus_id"]
UNITS = {"memory.total": "MiB", "memory.used": "MiB", "memory.free": "MiB", "power.limit": "W",
         "enforced.power.limit": "W", "power.default_limit": "W", "power.min_limit": "W",
         "power.max_limit": "W", "clocks.max.graphics": "MHz", "clocks.max.gr": "MHz", "power.draw": "W",
         "clocks.gr": "MHz", "clocks.current.graphics": "MHz"}


def query_value(st, g, f, nounits):
    m = model(st)
    mig_supported = bool(m["profiles"])
    u = lambda v, unit: v if nounits else "%s %s" % (v, unit)
    used = mib_used(st, g)
    if f == "index":
        return str(g["index"])
    if f in ("name", "gpu_name"):
        return name_of(st, g)
    if f in ("uuid", "gpu_uuid"):
        return g["uuid"]
    if f in ("pci.bus_id", "gpu_bus_id"):
        return g["bus_id"]
    if f == "driver_version":
        return st["driver"]
    if f == "count":
        return str(len(st["gpus"]))
    if f == "memory.total":
        return u(str(m["mem_total"]), "MiB")
    if f == "memory.used":
        return u(str(used), "MiB")
    if f == "memory.free":
        return u(str(m["mem_total"] - m["mem_reserved"] - used), "MiB")
    if f in ("power.limit", "enforced.power.limit"):
        return u("%.2f" % g["power_limit"], "W")
    if f == "power.default_limit":
        return u("%.2f" % m["power"][2], "W")
    if f == "power.min_limit":
        return u("%.2f" % m["power"][0], "W")
    if f == "power.max_limit":
        return u("%.2f" % m["power"][1], "W")
    if f == "power.draw":
        return u("%.2f" % (power_draw(st, g) + 0.58), "W")
    if f in ("clocks.max.graphics", "clocks.max.gr"):
        return u(str(m["clocks"][1]), "MHz")
    if f in ("clocks.gr", "clocks.current.graphics"):
        return u(str(current_gfx_clock(st, g)), "MHz")
    if f == "persistence_mode":
        return "Enabled" if g["persistence"] else "Disabled"
    if f == "mig.mode.current":
        return ("Enabled" if g["mig_current"] else "Disabled") if mig_supported else "[N/A]"
    if f == "mig.mode.pending":
        return ("Enabled" if g["mig_pending"] else "Disabled") if mig_supported else "[N/A]"
    raise KeyError(f)


def query_gpu(st, gpus, fields_s, fmt):
    fields = [f.strip() for f in fields_s.split(",") if f.strip()]
    opts = [o.strip() for o in fmt.split(",")]
    if not opts or opts[0] != "csv" or any(o not in ("csv", "noheader", "nounits") for o in opts):
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    for f in fields:
        if f not in QUERY_FIELDS:
            raise SimExit(EXIT_INVALID, err='Field "%s" is not a valid field to query.\n\n' % f)
    nounits = "nounits" in opts
    L = []
    if "noheader" not in opts:
        hdr = []
        for f in fields:
            if f in UNITS:
                hdr.append("%s [%s]" % (f, UNITS[f]))
            else:
                hdr.append(f)
        L.append(", ".join(hdr))
    for g in gpus:
        L.append(", ".join(query_value(st, g, f, nounits) for f in fields))
    return "\n".join(L) + "\n"


GARBAGE = ("\x1b[?25l%%%% NVML ????? GPU 0x7f3a: <binary>\n\xbf\xbd\xbf\xbd |||| 00000000:ZZ:00.0 ??? 999999MiB\n"
           "==============NVSMI=LOG=?==\nsegmentation? MIG 9g.999gb  ID -1  7/0\n")
# garbage="binary": what a wrong file at nvidia-smi's path, or a driver writing its memory out, prints: 4 KiB of bytes,
# NUL, terminal escapes and invalid UTF-8 among them.
GARBAGE_BINARY = b"\x7fELF\x02\x01\x01\x00\x1b[2J\x1b]0;owned\x07" + bytes((i * 37 + 11) % 256 for i in range(4072))


# --------------------------------------------------------------------------------------------
# Command handling
# --------------------------------------------------------------------------------------------

class Args:
    pass


def parse(argv):
    a = Args()
    a.ids = None
    a.mode = None          # table, q, L, query, mig, set_mig, lgc, rgc, pl, pm
    a.mig_sub = None       # lgip, lgipp, lgi, lci, cgi, cci, dci, dgi
    a.value = None
    a.C = False
    a.gi = None
    a.ci = None
    a.query = None
    a.fmt = None
    i = 0
    args = list(argv)
    if args and args[0] == "mig":
        a.mode = "mig"
        args = args[1:]

    def need(j):
        if j >= len(args):
            raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
        return args[j]

    def set_mode(mo, sub=None):
        if a.mode not in (None, "mig") or (a.mode == "mig" and sub is None) or \
                (a.mode is None and sub is not None) or (sub is not None and a.mig_sub is not None):
            raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
        if sub is not None:
            a.mig_sub = sub
        else:
            a.mode = mo

    while i < len(args):
        t = args[i]
        key, eq, inline = t.partition("=")
        val = inline if eq else None

        def arg():
            nonlocal i
            if val is not None:
                return val
            i += 1
            return need(i)

        if key in ("-i", "--id"):
            a.ids = arg()
        elif a.mode == "mig" and key in ("-lgip", "--list-gpu-instance-profiles"):
            set_mode("mig", "lgip")
        elif a.mode == "mig" and key in ("-lgipp", "--list-gpu-instance-possible-placements"):
            set_mode("mig", "lgipp")
        elif a.mode == "mig" and key in ("-lgi", "--list-gpu-instances"):
            set_mode("mig", "lgi")
        elif a.mode == "mig" and key in ("-lci", "--list-compute-instances"):
            set_mode("mig", "lci")
        elif a.mode == "mig" and key in ("-cgi", "--create-gpu-instance"):
            set_mode("mig", "cgi")
            a.value = arg()
        elif a.mode == "mig" and key in ("-cci", "--create-compute-instance"):
            set_mode("mig", "cci")
            if val is not None:
                a.value = val
            elif i + 1 < len(args) and not args[i + 1].startswith("-"):
                i += 1
                a.value = args[i]
        elif a.mode == "mig" and key in ("-dci", "--destroy-compute-instance"):
            set_mode("mig", "dci")
        elif a.mode == "mig" and key in ("-dgi", "--destroy-gpu-instance"):
            set_mode("mig", "dgi")
        elif a.mode == "mig" and key == "-C":
            a.C = True
        elif a.mode == "mig" and key in ("-gi", "--gpu-instance-id"):
            a.gi = arg()
        elif a.mode == "mig" and key in ("-ci", "--compute-instance-id"):
            a.ci = arg()
        elif a.mode == "mig":
            raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
        elif key in ("-q", "--query", "-a"):
            set_mode("q")
        elif key in ("-L", "--list-gpus"):
            set_mode("L")
        elif key == "--query-gpu":
            set_mode("query")
            a.query = arg()
        elif key == "--format":
            a.fmt = arg()
        elif key in ("-mig", "--multi-instance-gpu"):
            set_mode("set_mig")
            a.value = arg()
        elif key in ("-lgc", "--lock-gpu-clocks"):
            set_mode("lgc")
            a.value = arg()
        elif key in ("-rgc", "--reset-gpu-clocks"):
            set_mode("rgc")
        elif key in ("-pl", "--power-limit"):
            set_mode("pl")
            a.value = arg()
        elif key in ("-pm", "--persistence-mode"):
            set_mode("pm")
            a.value = arg()
        else:
            raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
        i += 1
    if a.mode is None:
        a.mode = "table"
    if a.mode == "mig" and a.mig_sub is None:
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    if a.mode == "query" and a.fmt is None:
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    if a.fmt is not None and a.mode != "query":
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    if a.mode != "mig" and a.mig_sub is None and (a.gi is not None or a.ci is not None or a.C):
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    return a


MUTATING = {"set_mig", "lgc", "rgc", "pl", "pm"}
MUTATING_MIG = {"cgi", "cci", "dci", "dgi"}


def is_mutation(a):
    return a.mode in MUTATING or (a.mode == "mig" and a.mig_sub in MUTATING_MIG)


def select_gpus(st, ids):
    gpus = st["gpus"]
    if ids is None:
        return list(gpus)
    out = []
    for tok in ids.split(","):
        tok = tok.strip()
        found = None
        if tok.isdigit():
            n = int(tok)
            if n < len(gpus):
                found = gpus[n]
        else:
            for g in gpus:
                if tok.lower() in (g["uuid"].lower(), g["bus_id"].lower(), g["bus_id"][4:].lower()):
                    found = g
        if found is None:
            raise SimExit(EXIT_NOT_FOUND, out="No devices were found\n")
        out.append(found)
    return out


def parse_id_list(s):
    try:
        return [int(x) for x in s.split(",") if x.strip() != ""]
    except ValueError:
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")


def euid():
    v = os.environ.get("GPU_COSPLAY_SIM_EUID")
    if v is not None and v.strip() != "":
        return int(v)
    return os.geteuid()


def permission_error(st, a, gpus):
    bus = gpus[0]["bus_id"] if gpus else st["gpus"][0]["bus_id"]
    g0 = gpus[0]["index"] if gpus else 0
    if a.mode == "pl":
        return "Failed to set power management limit for GPU %s: Insufficient Permissions\n" % bus
    if a.mode in ("lgc", "rgc"):
        return ("The current user does not have permission to change clocks for GPU %s.\n%s\n" % (bus, TERMINATING))
    if a.mode == "pm":
        return "Failed to set persistence mode for GPU %s: Insufficient Permissions\n%s\n" % (bus, TERMINATING)
    if a.mode == "set_mig":
        verb = "enable" if a.value.strip() in ("1", "ENABLED", "Enabled") else "disable"
        return "Unable to %s MIG Mode for GPU %s: Insufficient Permissions\n%s\n" % (verb, bus, TERMINATING)
    if a.mig_sub == "cgi":
        return ("Unable to create a GPU instance on GPU %2d using profile %s: Insufficient Permissions\n"
                "Failed to create GPU instances: Insufficient Permissions\n" % (g0, a.value.split(",")[0]))
    if a.mig_sub == "cci":
        return ("Unable to create a compute instance on GPU %2d GPU instance ID %s: Insufficient Permissions\n"
                "Failed to create compute instances: Insufficient Permissions\n" % (g0, a.gi or "0"))
    if a.mig_sub == "dci":
        return "Failed to destroy compute instances: Insufficient Permissions\n"
    return "Failed to destroy GPU instances: Insufficient Permissions\n"


def pm_warning(g):
    return "" if g["persistence"] else "\n" + PM_WARNING % g["bus_id"] + "\n"


def do_set_mig(st, a, gpus):
    v = a.value.strip()
    if v in ("1", "ENABLED", "Enabled"):
        on = True
    elif v in ("0", "DISABLED", "Disabled"):
        on = False
    else:
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    out = []
    verb = "enable" if on else "disable"
    for g in gpus:
        if not model(st)["profiles"]:
            raise SimExit(EXIT_NOT_SUPPORTED, out="".join(out),
                          err="Unable to %s MIG Mode for GPU %s: Not Supported\n%s\n" % (verb, g["bus_id"], TERMINATING))
        busy = bool(g["processes"]) or (not on and bool(g["gis"]))
        if busy:
            raise SimExit(EXIT_IN_USE, out="".join(out),
                          err="Unable to %s MIG Mode for GPU %s: In use by another client\n%s\n" % (verb, g["bus_id"], TERMINATING))
        if st.get("mig_needs_reset") and g["mig_current"] != on:
            g["mig_pending"] = on
            out.append("Warning: MIG mode is in pending %s state for GPU %s:In use by another client\n"
                       "%s is currently being used by one or more other processes (e.g. CUDA application or a "
                       "monitoring application such as another instance of nvidia-smi). Please first kill all "
                       "processes using the device and retry the command or reboot the system to make MIG mode "
                       "effective.\n" % (verb, g["bus_id"], g["bus_id"]))
            continue
        g["mig_current"] = on
        g["mig_pending"] = on
        if not on:
            g["gis"] = []
        out.append("%s MIG Mode for GPU %s\n" % ("Enabled" if on else "Disabled", g["bus_id"]))
        out.append(pm_warning(g))
    out.append("All done.\n")
    return "".join(out)


def mig_targets(st, gpus, explicit):
    tg = [g for g in gpus if g["mig_current"]]
    if not tg or (explicit and len(tg) != len(gpus)):
        raise SimExit(EXIT_NOT_FOUND, out="No MIG-enabled devices found.\n")
    return tg


def new_ci(st, g, gi, gp, ci_pid):
    size = CI_SLICES.get(ci_pid, 1)
    start = ci_start(gi, size, gp)
    if start is None:
        return None
    used_ids = {c["id"] for c in gi["cis"]}
    cid = 0
    while cid in used_ids:
        cid += 1
    if size >= gp["cslices"]:
        size = 1
        while size < gp["cslices"]:
            size *= 2  # a full-GI CI is listed as 0:2 / 0:4 / 0:8 (3g.40gb CI shows 0:4 in captures)
    ci = {"id": cid, "profile_id": ci_pid, "start": start, "size": size,
          "uuid": rand_uuid("MIG"), "seq": g.get("next_dev_seq", 0)}
    g["next_dev_seq"] = g.get("next_dev_seq", 0) + 1
    gi["cis"].append(ci)
    return ci


def busy_non_mig(g):
    return any(p.get("gi") is None for p in g["processes"])


def do_cgi(st, a, gpus):
    out = []
    toks = [t for t in a.value.split(",") if t.strip()]
    if not toks:
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    for g in gpus:
        for tok in toks:
            p = resolve_profile(st, tok)
            fail = None
            if p is None:
                fail = ("Invalid Argument", EXIT_INVALID)
            elif busy_non_mig(g):
                fail = ("In use by another client", EXIT_IN_USE)
            else:
                start = choose_start(st, g, p)
                if start is None:
                    fail = ("Insufficient Resources", EXIT_IN_USE)
            if fail:
                raise SimExit(fail[1], out="".join(out),
                              err="Unable to create a GPU instance on GPU %2d using profile %s: %s\n"
                                  "Failed to create GPU instances: %s\n" % (g["index"], tok.strip(), fail[0], fail[0]))
            gid = gi_id_for(st, p["size"], start)
            gi = {"id": gid, "profile_id": p["id"], "start": start, "size": p["size"], "cis": []}
            g["gis"].append(gi)
            out.append("Successfully created GPU instance ID %2d on GPU %2d using profile MIG %s (ID %2d)\n"
                       % (gid, g["index"], p["name"], p["id"]))
            if a.C:
                ci = new_ci(st, g, gi, p, p["ci_default"])
                out.append(ci_created_line(st, ci["id"], g["index"], gid, ci_profile_name(p, ci["profile_id"]), ci["profile_id"]))
    return "".join(out)


def ci_created_line(st, ci_id, gpu_index, gi_id, profile_name, profile_id):
    # Old drivers (MIG User Guide, R450 era) do not print the new compute instance's ID.
    ident = "" if st.get("ci_id_in_output") is False else " ID %2d" % ci_id
    return ("Successfully created compute instance%s on GPU %2d GPU instance ID %2d using profile MIG %s (ID %2d)\n"
            % (ident, gpu_index, gi_id, profile_name, profile_id))


def find_gis(g, gi_ids):
    if gi_ids is None:
        return sorted(g["gis"], key=lambda x: x["id"])
    res = []
    for gid in gi_ids:
        m = [x for x in g["gis"] if x["id"] == gid]
        res.append(m[0] if m else gid)
    return res


def do_cci(st, a, gpus):
    if a.gi is None:
        gi_ids = None
    else:
        gi_ids = parse_id_list(a.gi)
    out = []
    for g in gpus:
        gis = find_gis(g, gi_ids)
        if not gis:
            raise SimExit(EXIT_NOT_FOUND, out="".join(out), err="No GPU instances found: Not Found\n")
        for gi in gis:
            if isinstance(gi, int):
                raise SimExit(EXIT_NOT_FOUND, out="".join(out),
                              err="Unable to create a compute instance on GPU %2d GPU instance ID %2d: Not Found\n"
                                  "Failed to create compute instances: Not Found\n" % (g["index"], gi))
            gp = prof_by_id(st, gi["profile_id"])
            toks = [t for t in (a.value or "").split(",") if t.strip()] or [str(gp["ci_default"])]
            for tok in toks:
                cid = resolve_ci_profile(gp, tok)
                if cid is None:
                    reason, code = "Invalid Argument", EXIT_INVALID
                else:
                    ci = new_ci(st, g, gi, gp, cid)
                    reason, code = ("Insufficient Resources", EXIT_IN_USE) if ci is None else (None, 0)
                if reason:
                    raise SimExit(code, out="".join(out),
                                  err="Unable to create a compute instance on GPU %2d GPU instance ID %2d using "
                                      "profile %s: %s\nFailed to create compute instances: %s\n"
                                      % (g["index"], gi["id"], tok.strip(), reason, reason))
                out.append(ci_created_line(st, ci["id"], g["index"], gi["id"], ci_profile_name(gp, cid), cid))
    return "".join(out)


def proc_in(g, gi_id, ci_id=None):
    for p in g["processes"]:
        if p.get("gi") == gi_id and (ci_id is None or p.get("ci") is None or p.get("ci") == ci_id):
            return True
    return False


def do_dci(st, a, gpus):
    gi_ids = None if a.gi is None else parse_id_list(a.gi)
    ci_ids = None if a.ci is None else parse_id_list(a.ci)
    out = []
    for g in gpus:
        if not g["gis"]:
            raise SimExit(EXIT_NOT_FOUND, out="".join(out), err="No GPU instances found: Not Found\n")
        for gi in find_gis(g, gi_ids):
            if isinstance(gi, int):
                raise SimExit(EXIT_NOT_FOUND, out="".join(out),
                              err="Unable to destroy compute instance from GPU %2d GPU instance ID %2d: Not Found\n"
                                  "Failed to destroy compute instances: Not Found\n" % (g["index"], gi))
            targets = sorted(gi["cis"], key=lambda c: c["id"]) if ci_ids is None else ci_ids
            if ci_ids is None and not targets:
                if gi_ids is not None:
                    raise SimExit(EXIT_NOT_FOUND, out="".join(out), err="No compute instances found: Not Found\n")
                continue
            for c in targets:
                cid = c["id"] if isinstance(c, dict) else c
                match = [x for x in gi["cis"] if x["id"] == cid]
                if not match:
                    raise SimExit(EXIT_NOT_FOUND, out="".join(out),
                                  err="Unable to destroy compute instance ID %2d from GPU %2d GPU instance ID %2d: "
                                      "Not Found\nFailed to destroy compute instances: Not Found\n"
                                      % (cid, g["index"], gi["id"]))
                if proc_in(g, gi["id"], cid):
                    raise SimExit(EXIT_IN_USE, out="".join(out),
                                  err="Unable to destroy compute instance ID %2d from GPU %2d GPU instance ID %2d: "
                                      "In use by another client\nFailed to destroy compute instances: In use by "
                                      "another client\n" % (cid, g["index"], gi["id"]))
                gi["cis"] = [x for x in gi["cis"] if x["id"] != cid]
                out.append("Successfully destroyed compute instance ID %2d from GPU %2d GPU instance ID %2d\n"
                           % (cid, g["index"], gi["id"]))
    if not out:
        raise SimExit(EXIT_NOT_FOUND, err="No compute instances found: Not Found\n")
    return "".join(out)


def do_dgi(st, a, gpus):
    gi_ids = None if a.gi is None else parse_id_list(a.gi)
    out = []
    for g in gpus:
        if not g["gis"]:
            raise SimExit(EXIT_NOT_FOUND, out="".join(out), err="No GPU instances found: Not Found\n")
        for gi in find_gis(g, gi_ids):
            if isinstance(gi, int):
                raise SimExit(EXIT_NOT_FOUND, out="".join(out),
                              err="Unable to destroy GPU instance ID %2d from GPU %2d: Not Found\n"
                                  "Failed to destroy GPU instances: Not Found\n" % (gi, g["index"]))
            if gi["cis"] or proc_in(g, gi["id"]):
                raise SimExit(EXIT_IN_USE, out="".join(out),
                              err="Unable to destroy GPU instance ID %2d from GPU %2d: In use by another client\n"
                                  "Failed to destroy GPU instances: In use by another client\n" % (gi["id"], g["index"]))
            g["gis"] = [x for x in g["gis"] if x["id"] != gi["id"]]
            out.append("Successfully destroyed GPU instance ID %2d from GPU %2d\n" % (gi["id"], g["index"]))
    return "".join(out)


def do_lgc(st, a, gpus):
    parts = a.value.split(",")
    if len(parts) != 2:
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    vals = []
    for p in parts:
        p = p.strip()
        if p.isdigit():
            vals.append(int(p))
        elif p in ("tdp", "max", "min"):
            vals.append(p)
        else:
            raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    lo, hi = model(st)["clocks"]
    norm = [{"tdp": hi, "max": hi, "min": lo}.get(v, v) if isinstance(v, str) else v for v in vals]
    out = []
    for g in gpus:
        g["clocks_locked"] = norm
        out.append('GPU clocks set to "(gpuClkMin %s, gpuClkMax %s)" for GPU %s\n' % (parts[0].strip(), parts[1].strip(), g["bus_id"]))
    out.append(pm_warning(gpus[0]) if len(gpus) == 1 else "")
    out.append("All done.\n")
    return "".join(out)


def do_rgc(st, a, gpus):
    for g in gpus:
        g["clocks_locked"] = None
    return "All done.\n"


def do_pl(st, a, gpus):
    try:
        w = float(a.value)
    except ValueError:
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    mn, mx, _ = model(st)["power"]
    out = []
    for g in gpus:
        if w < mn or w > mx:
            raise SimExit(EXIT_INVALID, out="".join(out),
                          err="Provided power limit %.2f W is not a valid power limit which should be between "
                              "%.2f W and %.2f W for GPU %s\n%s\n" % (w, mn, mx, g["bus_id"], TERMINATING))
        old = g["power_limit"]
        g["power_limit"] = w
        out.append("Power limit for GPU %s was set to %.2f W from %.2f W.\n" % (g["bus_id"], w, old))
    out.append("All done.\n")
    return "".join(out)


def do_pm(st, a, gpus):
    v = a.value.strip()
    if v in ("1", "ENABLED", "Enabled"):
        on = True
    elif v in ("0", "DISABLED", "Disabled"):
        on = False
    else:
        raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")
    out = []
    for g in gpus:
        if g["persistence"] == on:
            out.append("Persistence mode is already %s for GPU %s.\n" % ("Enabled" if on else "Disabled", g["bus_id"]))
        else:
            g["persistence"] = on
            out.append("%s persistence mode for GPU %s.\n" % ("Enabled" if on else "Disabled", g["bus_id"]))
    out.append("All done.\n")
    return "".join(out)


def needs_root(st, argv):
    """require_root: true (every change), or a list of argv substrings (only the changes whose argv holds one)."""
    rule = st.get("require_root")
    if isinstance(rule, list):
        joined = " ".join(argv)
        return any(m in joined for m in rule)
    return bool(rule)


def run(st, argv):
    """Returns (stdout, stderr, exit, changed)."""
    a = parse(argv)
    gpus = select_gpus(st, a.ids)
    if is_mutation(a) and needs_root(st, argv) and euid() != 0:
        raise SimExit(EXIT_NO_PERM, err=permission_error(st, a, gpus))
    if st.get("garbage") and not is_mutation(a):
        return (GARBAGE_BINARY if st["garbage"] == "binary" else GARBAGE), "", 0, False
    if a.mode == "table":
        return default_table(st, gpus), "", 0, False
    if a.mode == "q":
        return query_all(st, gpus), "", 0, False
    if a.mode == "L":
        return list_gpus(st, gpus), "", 0, False
    if a.mode == "query":
        return query_gpu(st, gpus, a.query, a.fmt), "", 0, False
    if a.mode == "set_mig":
        return do_set_mig(st, a, gpus), "", 0, True
    if a.mode == "lgc":
        return do_lgc(st, a, gpus), "", 0, True
    if a.mode == "rgc":
        return do_rgc(st, a, gpus), "", 0, True
    if a.mode == "pl":
        return do_pl(st, a, gpus), "", 0, True
    if a.mode == "pm":
        return do_pm(st, a, gpus), "", 0, True
    # mig subcommands
    sub = a.mig_sub
    if sub in ("lgi", "lci", "cgi", "cci", "dci", "dgi", "lgip", "lgipp"):
        tg = mig_targets(st, gpus, a.ids is not None)
    if sub == "lgip":
        return lgip(st, tg), "", 0, False
    if sub == "lgipp":
        return lgipp(st, tg), "", 0, False
    if sub == "lgi":
        out = lgi(st, tg)
        if out is None:
            raise SimExit(EXIT_NOT_FOUND, err="No GPU instances found: Not Found\n")
        return out, "", 0, False
    if sub == "lci":
        if not any(g["gis"] for g in tg):
            raise SimExit(EXIT_NOT_FOUND, err="No GPU instances found: Not Found\n")
        out = lci(st, tg, None if a.gi is None else parse_id_list(a.gi), None if a.ci is None else parse_id_list(a.ci))
        if out is None:
            raise SimExit(EXIT_NOT_FOUND, err="No compute instances found: Not Found\n")
        return out, "", 0, False
    if sub == "cgi":
        return do_cgi(st, a, tg), "", 0, True
    if sub == "cci":
        return do_cci(st, a, tg), "", 0, True
    if sub == "dci":
        return do_dci(st, a, tg), "", 0, True
    if sub == "dgi":
        return do_dgi(st, a, tg), "", 0, True
    raise SimExit(EXIT_INVALID, err=INVALID_ARGS + "\n")


# --------------------------------------------------------------------------------------------
# Sim control
# --------------------------------------------------------------------------------------------

def sim_set(st, spec):
    key, eq, raw = spec.partition("=")
    if not eq:
        raise SystemExit("nvidia-smi simulator: --sim-set expects KEY=JSON, got %r" % spec)
    try:
        val = json.loads(raw)
    except ValueError:
        val = raw
    parts = key.split(".")
    cur = st
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur.setdefault(p, {})
    last = parts[-1]
    if isinstance(cur, list):
        cur[int(last)] = val
    else:
        cur[last] = val
    if key == "driver":
        st["cuda"] = cuda_for(val)


def sim_main(path, argv):
    store = Store(path)
    if argv[0] == "--sim-init":
        opts = {"--model": "h200", "--gpus": "8", "--driver": "550.90.12"}
        i = 1
        while i < len(argv):
            if argv[i] in opts and i + 1 < len(argv):
                opts[argv[i]] = argv[i + 1]
                i += 2
            else:
                sys.stderr.write("nvidia-smi simulator: usage: --sim-init --model %s --gpus N [--driver X]\n"
                                 % "|".join(MODELS))
                return 2
        if opts["--model"] not in MODELS:
            sys.stderr.write("nvidia-smi simulator: unknown model %r (known: %s)\n" % (opts["--model"], ", ".join(MODELS)))
            return 2
        store.lock()
        try:
            store.save(new_state(opts["--model"], int(opts["--gpus"]), opts["--driver"]))
            try:
                os.remove(path + ".calls.log")
            except FileNotFoundError:
                pass
        finally:
            store.unlock()
        return 0
    store.lock()
    try:
        st = store.load()
        i = 0
        dump = False
        while i < len(argv):
            if argv[i] == "--sim-set" and i + 1 < len(argv):
                sim_set(st, argv[i + 1])
                i += 2
            elif argv[i] == "--sim-dump":
                dump = True
                i += 1
            else:
                sys.stderr.write("nvidia-smi simulator: unknown sim option %r\n" % argv[i])
                return 2
        store.save(st)
        if dump:
            sys.stdout.write(json.dumps(st, indent=1, sort_keys=True) + "\n")
    finally:
        store.unlock()
    return 0


def fault_for(st, store, argv):
    faults = st.get("faults") or []
    if not faults:
        return None
    joined = " ".join(argv)
    log = store.log_lines()
    for f in faults:
        m = f.get("match")
        if m is not None and m not in joined:
            continue
        n = 1 + sum(1 for r in log if m is None or m in " ".join(r.get("argv", [])))
        if n == int(f.get("at", 0)):
            return f
    return None


def main():
    argv = sys.argv[1:]
    path = state_path()
    if argv and argv[0].startswith("--sim-"):
        return sim_main(path, argv)
    store = Store(path)
    store.lock()
    locked = True
    try:
        st = store.load()
        fault = fault_for(st, store, argv)
        if fault is not None and fault.get("action") == "hang":
            store.log(argv, None, {"fault": "hang"})
            store.unlock()
            locked = False
            sys.stdout.flush()
            while True:
                time.sleep(3600)
        if fault is not None and fault.get("action") == "delay":
            # Slow but successful: lets tests press Ctrl-C while a step is in flight.
            store.unlock()
            locked = False
            time.sleep(float(fault.get("seconds", 2)))
            store.lock()
            locked = True
            st = store.load()
            fault = None
        if fault is not None and fault.get("action", "fail") == "fail":
            code = int(fault.get("exit", 1))
            msg = fault.get("message", "Failed to initialize NVML: Unknown Error")
            sys.stderr.write(msg + "\n")
            store.log(argv, code, {"fault": "fail"})
            return code
        try:
            out, err, code, changed = run(st, argv)
        except SimExit as e:
            out, err, code, changed = e.out, e.err, e.code, True
        if changed:
            store.save(st)
        if fault is not None and fault.get("action") == "hang-after":
            # The change is made, then the process never returns: "done but not recorded" for the caller.
            store.log(argv, code, {"fault": "hang-after"})
            store.unlock()
            locked = False
            while True:
                time.sleep(3600)
        store.log(argv, code)
        if isinstance(out, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(out)
        else:
            sys.stdout.write(out)
        sys.stdout.flush()
        if err:
            sys.stderr.write(err)
        return code
    finally:
        if locked:
            store.unlock()


if __name__ == "__main__":
    sys.exit(main())
