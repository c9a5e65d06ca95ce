"""A real InspIRCd 3.15 (Debian's) for the interop tests: its config, pid and logs in a directory
of its own, on free loopback ports, ended by the test. With `link_port` it also listens for
servers, and each of `links` (name, password[, SHA-256 fingerprint]) may link to it (the
spanning-tree protocol); with `tls` (certificate, key) a second link port speaks TLS
(`tls_link_port`, GnuTLS), where a link with a fingerprint must show that certificate."""
import os
import shutil
import subprocess
import tempfile

import pytest

from conftest import free_port, stop_process, wait_for_port

INSPIRCD = "/usr/sbin/inspircd"

BASE_CONF = """
<server name="{name}" description="chat-tui test peer" id="{sid}" network="inspircdtest">
<admin name="test" nick="test" email="test@localhost">
<bind address="127.0.0.1" port="{port}" type="clients">
<connect allow="*" timeout="60" threshold="100000" commandrate="100000" fakelag="no" pingfreq="600"
         localmax="1000" globalmax="1000" useident="no" resolvehostnames="no">
<class name="All" commands="*" privs="*" usermodes="*" chanmodes="*">
<type name="NetAdmin" classes="All" host="netadmin.test">
<oper name="root" password="rootpass" host="*@*" type="NetAdmin">
<pid file="{dir}/inspircd.pid">
<log method="file" type="*" level="default" target="{dir}/inspircd.log">
<dns server="127.0.0.1" timeout="1">
<options hostintopic="yes" serverpingfreq="10" pingwarning="0" casemapping="{casemapping}">
<security hideserver="" flatlinks="no" hidesplits="no" hideulines="no">
<performance quietbursts="no">
"""


class InspIRCd:
    """A real InspIRCd on a free loopback port (started again on the same ports by `restart`)."""

    def __init__(self, name="irc.inspircd.test", sid="9IR", link_port=None, links=(), modules=(), tls=None, casemapping="rfc1459"):
        if not os.path.exists(INSPIRCD):
            pytest.fail("InspIRCd is missing at /usr/sbin/inspircd (make deps installs it)")
        self.dir = tempfile.mkdtemp(prefix="chat-tui-inspircd-")
        self.name = name
        self.port = free_port()
        self.link_port = link_port
        config = BASE_CONF.format(name=name, sid=sid, port=self.port, dir=self.dir, casemapping=casemapping)
        if link_port is not None:
            config += f'<bind address="127.0.0.1" port="{link_port}" type="servers">\n<module name="spanningtree">\n'
        self.tls_link_port = None
        if tls is not None:
            self.tls_link_port = free_port()
            config += (f'<module name="ssl_gnutls">\n<sslprofile name="Servers" provider="gnutls" certfile="{tls[0]}" '
                       f'keyfile="{tls[1]}" hash="sha256" requestclientcert="yes">\n'
                       f'<bind address="127.0.0.1" port="{self.tls_link_port}" type="servers" sslprofile="Servers">\n')
        for link_name, password, *pinned in links:
            config += (f'<link name="{link_name}" ipaddr="127.0.0.1" port="1" allowmask="127.0.0.0/8" timeout="20" '
                       f'sendpass="{password}" recvpass="{password}"')
            if pinned and pinned[0]:
                config += f' sslprofile="Servers" fingerprint="{pinned[0].replace(":", "").lower()}"'
            config += '>\n'

        for module in modules:
            config += f'<module name="{module}">\n'
        self.config = os.path.join(self.dir, "inspircd.conf")
        with open(self.config, "w") as f:
            f.write(config)
        self.output = open(os.path.join(self.dir, "stdout.log"), "a")
        self.start()

    def start(self):
        command = [INSPIRCD, "--nofork", "--config", self.config]
        if os.geteuid() == 0:
            command.append("--runasroot")
        # In its own directory: InspIRCd 3.15 with GnuTLS can crash while exiting on SIGTERM
        # (a segfault in InspIRCd::Exit), and its core file lands there, removed with it.
        self.process = subprocess.Popen(command, stdout=self.output, stderr=subprocess.STDOUT, start_new_session=True,
                                        cwd=self.dir)
        try:
            wait_for_port(self.port)
        except RuntimeError:
            self.stop()
            raise

    def kill(self):
        """Gone at once, as a crash or a cut cable: its links drop without a goodbye."""
        self.process.kill()
        self.process.wait()

    def restart(self):
        if self.process.poll() is None:
            self.kill()
        self.start()

    def log(self):
        try:
            with open(os.path.join(self.dir, "inspircd.log")) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        stop_process(self.process)
        self.output.close()
        shutil.rmtree(self.dir, ignore_errors=True)
