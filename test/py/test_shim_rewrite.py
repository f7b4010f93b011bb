"""nvidia-smi shim rewrites on real captures (test/fixtures/nvidia-smi, copied unchanged from shared/)."""
import os
import re
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "runtime-hooks"))
import gpu_cosplay_smi_rewrite as R  # noqa: E402

FIX = os.path.join(ROOT, "test", "fixtures", "nvidia-smi")
NAME = "NVIDIA GeForce RTX 3090"
CAP = 24576
TDP = 350
HOST_RE = re.compile(r"H200|H100|A100|GH200|A30\b|CMP 170HX")


def load(name):
    with open(os.path.join(FIX, name)) as fh:
        return fh.read()


def rewrite(name, args=(), target=NAME):
    return R.rewrite_text(load(name), target, CAP, TDP, args)


TABLES = [
    "h200-sxm-141gb__nvidia-smi.txt",
    "h100-sxm-80gb-x8__nvidia-smi.txt",
    "h100-sxm-80gb__nvidia-smi-mig-r580.txt",
    "a100-sxm4-80gb-x4__nvidia-smi.txt",
    "a100-sxm4-40gb__nvidia-smi-mig-devices-with-bar1.txt",
    "a100-sxm4-40gb__nvidia-smi-mig-devices-shared-gi-3ci.txt",
    "a100-pcie-80gb__nvidia-smi-mig-enabled-no-devices-r515.txt",
    "a100-sxm4-80gb-x2__nvidia-smi-mixed-mig-partial-r510.txt",
    "gh200-480gb__nvidia-smi.txt",
    "h100-nvl-94gb-x2__nvidia-smi.txt",
]


def table_lines(text):
    return [l for l in text.splitlines() if l.startswith("|") or l.startswith("+")]


class DefaultTableTest(unittest.TestCase):
    def test_tables(self):
        for fx in TABLES:
            with self.subTest(fixture=fx):
                src = load(fx)
                out = rewrite(fx)
                widths = {len(l) for l in table_lines(src)}
                for l in table_lines(out):
                    self.assertIn(len(l), widths, "width changed: %r" % l)
                self.assertNotRegex(out, HOST_RE)
                self.assertNotIn("MIG devices:", out)
                self.assertNotRegex(out, r"\|\s+\d+\s+\d+\s+\d+\s+\d+\s+\|")  # no MIG device rows
                self.assertNotIn("Enabled |", out)
                self.assertNotIn("Disabled |", out)
                gpu_rows = [l for l in out.splitlines() if re.match(r"^\|\s+\d+\s+NVIDIA", l)]
                src_rows = [l for l in src.splitlines() if re.match(r"^\|\s+\d+\s+NVIDIA", l)]
                self.assertEqual(len(gpu_rows), len(src_rows))
                for l in gpu_rows:
                    self.assertTrue(NAME in l or "NVIDIA GeForce ..." in l, l)
                for m in re.finditer(r"(\d+)MiB /\s+(\d+)MiB", "\n".join(
                        l for l in out.splitlines() if "W /" in l)):
                    self.assertEqual(int(m.group(2)), CAP)
                    self.assertLessEqual(int(m.group(1)), CAP)
                for m in re.finditer(r"(\d+)W /\s*(\d+)W", out):
                    self.assertEqual(int(m.group(2)), TDP)
                    self.assertLessEqual(int(m.group(1)), TDP)
                self.assertNotIn("\n\n\n", out)

    def test_h200_exact(self):
        out = rewrite("h200-sxm-141gb__nvidia-smi.txt").splitlines()
        self.assertEqual(out[7], "|   0  NVIDIA GeForce RTX 3090        On  |   00000000:03:00.0 Off |                    0 |")
        self.assertEqual(out[8], "| N/A   28C    P0             74W /  350W |       1MiB /  24576MiB |      0%      Default |")
        self.assertEqual(out[9], "|                                         |                        |                  N/A |")
        # same layout as a real 3090 capture
        real = load("rtx3090-x2__nvidia-smi.txt").splitlines() if os.path.exists(
            os.path.join(FIX, "rtx3090-x2__nvidia-smi.txt")) else None
        if real:
            self.assertEqual(len(out[7]), len(real[7]))
            self.assertEqual(out[7][6:41], real[7][6:41])

    def test_mig_used_comes_from_mig_devices(self):
        out = rewrite("h100-sxm-80gb__nvidia-smi-mig-r580.txt")
        self.assertIn("     88MiB /  24576MiB", out)  # 44 + 44 MiB of the two MIG devices
        self.assertFalse(out.endswith("\n\n"))

    def test_processes_gi_ci_hidden(self):
        out = rewrite("a100-sxm4-40gb__nvidia-smi-mig-devices-with-bar1.txt")
        self.assertIn("|    0  N/A  N/A       6217      C   ...inux/release/BlackScholes      253MiB |", out)
        self.assertTrue(out.startswith("+---"))

    def test_mps_server_row_is_labelled(self):
        # rows as NVML shows an MPS server and its clients (layout of a published R550 table; pids made up)
        table = "\n".join([
            "+-----------------------------------------------------------------------------------------+",
            "| Processes:                                                                              |",
            "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |",
            "|        ID   ID                                                               Usage      |",
            "|=========================================================================================|",
            "|    0    1    0    1127738      C   nvidia-cuda-mps-server                         30MiB |",
            "|    0    1    0    1397691    M+C   python3 train.py                             1018MiB |",
            "|    0    1    0    1127739      C   /usr/bin/nvidia-cuda-mps-server                30MiB |",
            "+-----------------------------------------------------------------------------------------+",
            ""])
        out = R.rewrite_text(table, NAME, CAP, TDP).splitlines()
        self.assertEqual([len(l) for l in out], [len(l) for l in table.splitlines()])
        self.assertIn("|    0  N/A  N/A    1127738      C   MPS server (its clients' memory)               30MiB |", out)
        self.assertIn("|    0  N/A  N/A    1397691    M+C   python3 train.py                             1018MiB |", out)
        self.assertIn("   MPS server (its clients' memory)               30MiB |", out[7])

    def test_long_names_truncate_like_nvidia_smi(self):
        out = R.rewrite_text(load("h200-sxm-141gb__nvidia-smi.txt"),
                             "NVIDIA RTX PRO 6000 Blackwell Server Edition", CAP, TDP)
        row = out.splitlines()[7]
        self.assertIn("|   0  NVIDIA RTX PRO 6000 Blackw...  On  |", row)
        self.assertEqual(len(row), 91)

    def test_streaming_holds_only_until_processes_end(self):
        rw = R.Rewriter(NAME, CAP, TDP)
        src = load("h200-sxm-141gb__nvidia-smi.txt").splitlines()
        emitted = []
        for i, l in enumerate(src):
            got = rw.feed(l)
            emitted.extend(got)
            if i == len(src) - 1:
                self.assertTrue(got, "the closing border of Processes flushes the frame")
        self.assertFalse(rw.pending())
        self.assertEqual(len(emitted), len(src))


class ListTest(unittest.TestCase):
    def test_L(self):
        for fx in ("a30__L-mig-3-devices.txt", "h100-pcie-80gb__L-mig.txt",
                   "h100-sxm-80gb__L-mig-r570-ci-sharing.txt", "a100-sxm4-40gb__L-mig-r450-style.txt"):
            with self.subTest(fixture=fx):
                out = rewrite(fx, ["-L"])
                lines = out.splitlines()
                self.assertEqual(len(lines), 1)
                self.assertRegex(lines[0], r"^GPU 0: NVIDIA GeForce RTX 3090 \(UUID: GPU-[0-9a-f-]+\)$")
                self.assertNotRegex(out, HOST_RE)
                self.assertNotIn("MIG", out)


class QueryTest(unittest.TestCase):
    def test_q_and_a(self):
        for fx in ("h200-sxm-141gb__nvidia-smi-a.txt", "h100-sxm-80gb-x8__nvidia-smi-a.txt",
                   "a100-sxm4-80gb-x4__nvidia-smi-a.txt", "t4__nvidia-smi-q-r530.txt"):
            with self.subTest(fixture=fx):
                src = load(fx)
                out = rewrite(fx, ["-q"])
                self.assertEqual(len(out.splitlines()), len(src.splitlines()))
                self.assertNotRegex(out, HOST_RE)
                self.assertNotIn("Tesla T4", out)
                names = re.findall(r"Product Name\s+: (.*)", out)
                self.assertTrue(names)
                self.assertEqual(set(names), {NAME})
                for block in re.findall(r"FB Memory Usage\n((?:        .*\n)+)", out):
                    vals = dict(re.findall(r"(\w+)\s+: (\d+) MiB", block))
                    self.assertEqual(int(vals["Total"]), CAP)
                    self.assertEqual(int(vals.get("Reserved", 0)) + int(vals["Used"]) + int(vals["Free"]), CAP)
                for key, val in re.findall(r"(?m)^\s+((?:Current |Requested |Default |Enforced |Max )?Power Limit)\s+: ([\d.]+) W", out):
                    self.assertEqual(float(val), TDP, key)
                for val in re.findall(r"Min Power Limit\s+: ([\d.]+) W", out):
                    self.assertLessEqual(float(val), TDP)
                mig = re.findall(r"MIG Mode\n\s+Current\s+: (.*)\n\s+Pending\s+: (.*)", out)
                for cur, pend in mig:
                    self.assertEqual((cur, pend), ("N/A", "N/A"))
                # key column alignment unchanged
                for a, b in zip(src.splitlines(), out.splitlines()):
                    if " : " in a:
                        self.assertEqual(a.index(" : "), b.index(" : "))

    def test_q_d_partials(self):
        for fx in ("hopper-700w-x4__q-d-power-r595-partial.txt", "laptop-gpu__q-d-power-r590-partial.txt",
                   "t4__nvidia-smi-q-d-MEMORY.txt"):
            with self.subTest(fixture=fx):
                out = rewrite(fx, ["-q", "-d", "POWER"])
                self.assertNotRegex(out, r"(Current|Max|Default|Requested) Power Limit\s+: (?!350\.00 W)")
        out = rewrite("t4__nvidia-smi-q-d-MEMORY.txt", ["-q", "-d", "MEMORY"])
        self.assertIn("Total                             : 24576 MiB", out)
        self.assertIn("Free                              : 24152 MiB", out)  # 24576 - 393 - 31
        self.assertIn("Total                             : 256 MiB", out)  # BAR1 untouched

    def test_xml(self):
        xml = ("<nvidia_smi_log>\n<gpu id=\"00000000:03:00.0\">\n<product_name>NVIDIA H200</product_name>\n"
               "<fb_memory_usage>\n<total>143771 MiB</total>\n<reserved>700 MiB</reserved>\n<used>1 MiB</used>\n"
               "<free>143072 MiB</free>\n</fb_memory_usage>\n<gpu_power_readings>\n"
               "<current_power_limit>700.00 W</current_power_limit>\n<min_power_limit>200.00 W</min_power_limit>\n"
               "</gpu_power_readings>\n</gpu>\n</nvidia_smi_log>\n")
        out = R.rewrite_text(xml, NAME, CAP, TDP, ["-q", "-x"])
        self.assertIn("<product_name>NVIDIA GeForce RTX 3090</product_name>", out)
        self.assertIn("<total>24576 MiB</total>", out)
        self.assertIn("<free>23875 MiB</free>", out)
        self.assertIn("<current_power_limit>350.00 W</current_power_limit>", out)
        self.assertIn("<min_power_limit>200.00 W</min_power_limit>", out)
        self.assertNotIn("H200", out)


class CsvTest(unittest.TestCase):
    def test_t4_with_header_and_units(self):
        out = rewrite("t4__query-gpu-index-name-memory-fabric-state-csv.txt",
                      ["--query-gpu=index,name,memory.total,memory.used,fabric.state", "--format=csv"])
        self.assertEqual(out.splitlines(), [
            "index, name, memory.total [MiB], memory.used [MiB], fabric.state",
            "0, NVIDIA GeForce RTX 3090, 24576 MiB, 31 MiB, state  N/A"])

    def test_power_limits_with_units(self):
        out = rewrite("geforce-unknown__query-gpu-power-limits-clocks-max-csv.txt",
                      ["--query-gpu", "power.limit,power.default_limit,power.min_limit,power.max_limit,"
                       "clocks.max.graphics,clocks.max.memory", "--format=csv"])
        self.assertEqual(out.splitlines()[1], "350.00 W, 350.00 W, 100.00 W, 350.00 W, 2220 MHz, 10151 MHz")

    def test_noheader_and_mig_mode(self):
        out = rewrite("a100-pcie-40gb__query-gpu-name-busid-mig-mode-csv-noheader.txt",
                      ["--query-gpu=name,pci.bus_id,mig.mode.current,mig.mode.pending", "--format=csv,noheader"])
        self.assertEqual(out.strip(), "NVIDIA GeForce RTX 3090, 00000000:04:00.0, [N/A], [N/A]")
        out = rewrite("cmp170hx-modded__query-gpu-name-mig-mode-csv-noheader.txt",
                      ["--query-gpu=name,mig.mode.current,mig.mode.pending", "--format=csv,noheader"])
        self.assertNotRegex(out, HOST_RE)

    def test_memory_consistent_nounits(self):
        src = "name, memory.total [MiB], memory.used [MiB], memory.free [MiB], enforced.power.limit [W]\n" \
              "NVIDIA H200, 143771, 30000, 113071, 700.00\n"
        out = R.rewrite_text(src, NAME, CAP, TDP,
                             ["--query-gpu=name,memory.total,memory.used,memory.free,enforced.power.limit",
                              "--format=csv,nounits"])
        self.assertEqual(out.splitlines()[1], "NVIDIA GeForce RTX 3090, 24576, 24576, 0, 350.00")
        src = "NVIDIA H200, 143771 MiB, 100 MiB, 143671 MiB\n"
        out = R.rewrite_text(src, NAME, CAP, TDP, ["--query-gpu=gpu_name,memory.total,memory.used,memory.free",
                                                   "--format=csv,noheader"])
        self.assertEqual(out, "NVIDIA GeForce RTX 3090, 24576 MiB, 100 MiB, 24476 MiB\n")


class WidthHelperTest(unittest.TestCase):
    def test_fit(self):
        self.assertEqual(R.fit("NVIDIA GeForce RTX 3090", 18), "NVIDIA GeForce ...")
        self.assertEqual(R.fit("ab", 4), "ab  ")
        self.assertEqual(R.fit("N/A", 6, "right"), "   N/A")



class RanksTest(unittest.TestCase):
    """Several cosplayed devices: N target cards where the driver shows one GPU and its MIG devices."""
    RANKS = ["MIG-aaaa-0", "MIG-bbbb-1"]

    def test_table_shows_one_card_per_rank(self):
        fx = "h100-sxm-80gb__nvidia-smi-mig-r580.txt"
        src = load(fx)
        out = R.rewrite_text(src, NAME, CAP, TDP, (), self.RANKS)
        widths = {len(l) for l in table_lines(src)}
        for l in table_lines(out):
            self.assertIn(len(l), widths, "width changed: %r" % l)
        rows = [l for l in out.splitlines() if re.match(r"^\|\s+\d+\s+NVIDIA", l)]
        self.assertEqual([int(l.split()[1]) for l in rows], [0, 1])
        for l in rows:
            self.assertIn(NAME, l)
        mem = re.findall(r"(\d+)MiB /\s+(\d+)MiB", out)
        self.assertEqual(mem, [("44", str(CAP)), ("44", str(CAP))])  # each slice's own use
        self.assertNotIn("MIG devices:", out)
        self.assertNotRegex(out, HOST_RE)
        # one rank: today's single card
        one = R.rewrite_text(src, NAME, CAP, TDP, (), self.RANKS[:1])
        self.assertEqual(one, rewrite(fx))

    def test_processes_go_to_the_rank_of_their_gpu_instance(self):
        out = R.rewrite_text(load("a100-sxm4-40gb__nvidia-smi-mig-devices-with-bar1.txt"), NAME, CAP, TDP, (),
                             self.RANKS)
        procs = [l for l in out.splitlines() if "BlackScholes" in l]
        self.assertEqual([l.split()[1:4] for l in procs], [["0", "N/A", "N/A"], ["1", "N/A", "N/A"]])

    def test_L_lists_the_ranks(self):
        out = R.rewrite_text(load("h100-pcie-80gb__L-mig.txt"), NAME, CAP, TDP, ("-L",), self.RANKS)
        self.assertEqual(out.splitlines(), ["GPU 0: %s (UUID: MIG-aaaa-0)" % NAME, "GPU 1: %s (UUID: MIG-bbbb-1)" % NAME])

    def test_query_gpu_prints_a_row_per_rank(self):
        args = ["--query-gpu=index,name,memory.total,memory.used,fabric.state", "--format=csv"]
        out = R.rewrite_text(load("t4__query-gpu-index-name-memory-fabric-state-csv.txt"), NAME, CAP, TDP, args, self.RANKS)
        self.assertEqual(out.splitlines(), [
            "index, name, memory.total [MiB], memory.used [MiB], fabric.state",
            "0, NVIDIA GeForce RTX 3090, 24576 MiB, 31 MiB, state  N/A",
            "1, NVIDIA GeForce RTX 3090, 24576 MiB, 31 MiB, state  N/A"])
        # the rank's uuid and the session's count; a second physical GPU's rows dropped, as in -L; every sample of -l
        src = ("2, GPU-1111, 00000000:04:00.0, NVIDIA H100 80GB HBM3\n2, GPU-2222, 00000000:05:00.0, NVIDIA H100 80GB HBM3\n") * 2
        args = ["--query-gpu=count,uuid,pci.bus_id,name", "--format=csv,noheader", "-l", "1"]
        out = R.rewrite_text(src, NAME, CAP, TDP, args, self.RANKS)
        rows = ["2, MIG-aaaa-0, 00000000:04:00.0, %s" % NAME, "2, MIG-bbbb-1, 00000000:04:00.0, %s" % NAME]
        self.assertEqual(out.splitlines(), rows * 2)
        # one rank: the card as without ranks
        out = R.rewrite_text(src, NAME, CAP, TDP, args, self.RANKS[:1])
        self.assertEqual(out, R.rewrite_text(src, NAME, CAP, TDP, args))
        self.assertEqual(len(out.splitlines()), 4)

    def test_whole_gpus_without_mig_are_copied(self):
        out = R.rewrite_text(load("h200-sxm-141gb__nvidia-smi.txt"), NAME, CAP, TDP, (), ["GPU-x", "GPU-x", "GPU-x"])
        rows = [l for l in out.splitlines() if re.match(r"^\|\s+\d+\s+NVIDIA", l)]
        self.assertEqual([int(l.split()[1]) for l in rows], [0, 1, 2])

if __name__ == "__main__":
    unittest.main()
