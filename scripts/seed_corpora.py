#!/usr/bin/env python3
"""Seeds Fuzz/corpus/TARGET/ from the tests' own lines: the IRC lines, CTCP/DCC offers, HTTP
requests and WebSocket frames the unit and interop tests use, one file each (named by a hash
of the content, so running this again adds only what is new). The fuzzers grow the corpora
from there; what they add is committed with them.

    python3 scripts/seed_corpora.py
"""
import glob, hashlib, os, re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Fuzz", "corpus")


def literals(paths):
    """Swift and Python string literals in the files, unescaped the simple way."""
    found = []
    for path in paths:
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r'"((?:[^"\\\n]|\\.){4,400})"', text):
            raw = m.group(1)
            raw = raw.replace("\\r", "\r").replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"').replace("\\\\", "\\")
            raw = re.sub(r"\\u\{([0-9A-Fa-f]+)\}", lambda u: chr(int(u.group(1), 16)), raw)
            found.append(raw)
    return found


def write(target, data):
    directory = os.path.join(OUT, target)
    os.makedirs(directory, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def main():
    swift = glob.glob(os.path.join(ROOT, "Tests", "**", "*.swift"), recursive=True)
    python = glob.glob(os.path.join(ROOT, "tests", "interop", "*.py"))
    strings = literals(swift + python)
    command = re.compile(r"^(@\S+ )?(:\S+ )?([A-Z]+|\d{3})( |$)")
    irc = sorted({s for s in strings if command.match(s) and "HTTP/1.1" not in s})
    for line in irc[:600]:
        write("irc", line.encode())
    for start in range(0, min(len(irc), 600), 6):
        write("client", "\n".join(irc[start:start + 6]).encode())
        write("framer", bytes([start % 17]) + "\r\n".join(irc[start:start + 6]).encode())
    for s in strings:
        if s.startswith("\u0001") or "DCC " in s or "CTCP" in s:
            write("ctcp", s.encode())
    for s in strings:
        if s.startswith(("r=", "v=", "e=")) or re.fullmatch(r"[A-Za-z0-9+/=]{8,}", s):
            write("sasl", s.encode())
    write("sasl", b"r=fixednonceSERVER,s=c2FsdHNhbHQ=,i=4096\nv=AAAA")
    for s in strings:
        if re.match(r"^(GET|POST|HEAD|OPTIONS|DELETE|PUT) \S+ HTTP/1\.[01]", s):
            write("http", bytes([len(s) % 60]) + s.encode())
            write("http", bytes([1]) + s.encode())
    write("http", b"\x01POST /upload/abc HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Disposition: attachment; filename*=UTF-8''a%2Fb\r\n\r\nhello")
    # WebSocket: masked client frames, as the tests build them.
    def frame(opcode, payload, final=True, mask=b"\x37\xfa\x21\x3d"):
        head = bytes([(0x80 if final else 0) | opcode])
        n = len(payload)
        head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126, n >> 8, n & 0xFF])
        return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    for i, payload in enumerate([b"NICK webby", b"PRIVMSG #lobby :hello", "é✓".encode(), b"\xff\xfe"]):
        write("websocket", bytes([3 + i]) + frame(1, payload))
        write("websocket", bytes([5]) + frame(1, payload[:3], final=False) + frame(9, b"ping") + frame(0, payload[3:]))
    write("websocket", bytes([2]) + frame(8, b"\x03\xe8bye"))
    # Server-to-server lines, from the link tests and the InspIRCd transcripts.
    link_sources = glob.glob(os.path.join(ROOT, "Tests", "ChatLinkTests", "*.swift")) + \
        glob.glob(os.path.join(ROOT, "Tests", "ChatServerKitTests", "Link*.swift")) + [os.path.join(ROOT, "docs", "inspircd-link-notes.md")]
    verbs = "SERVER|UID|FJOIN|CAPAB|BURST|ENDBURST|FMODE|IJOIN|PRIVMSG|SQUIT|NICK|QUIT|PART|KICK|FTOPIC|METADATA"
    for path in link_sources:
        text = open(path, encoding="utf-8").read()
        for m in re.finditer(r"(:?[0-9A-Z]{3,9} (?:" + verbs + r")[^\"\n]*)", text):
            write("link", m.group(1).encode())
    for target in sorted(os.listdir(OUT)):
        print(f"{target}: {len(os.listdir(os.path.join(OUT, target)))} inputs")


if __name__ == "__main__":
    main()
