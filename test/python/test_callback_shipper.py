# Unit tests of the sender side of logbook's callback (Shipper), without
# Ansible: a real HTTP server on a free loopback port plays a logbook that
# answers 503 at first; the bodies it receives must be byte-identical retries
# with the same seq, and a run that cannot reach it must leave its batches in
# the spool for the next Shipper to send. Run: python3 -m unittest discover -s test/python
import gzip
import http.server
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "src", "ansible", "callback"))
import logbook  # noqa: E402


class Ingest(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        srv = self.server
        body = self.rfile.read(int(self.headers["Content-Length"]))
        srv.wire.append((self.headers.get("Content-Encoding"), body))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        srv.bodies.append(body)
        if srv.fail_first > 0:
            srv.fail_first -= 1
            self._send(503, {"detail": "busy"})
            return
        batch = json.loads(body)
        stream = batch["playbook"]["uuid"]
        last = srv.last.get(stream, 0)
        if batch["seq"] <= last:
            self._send(200, {"playbook": 1, "seq": batch["seq"], "applied": 0, "duplicate": True})
            return
        if batch["seq"] != last + 1:
            self._send(409, {"detail": "Expected seq %d." % (last + 1)})
            return
        srv.last[stream] = batch["seq"]
        srv.events.extend(batch["events"])
        self._send(200, {"playbook": 1, "seq": batch["seq"], "applied": len(batch["events"]), "rejected": [], "duplicate": False})

    def _send(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def serve(port=0, fail_first=0, tls=None):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Ingest)
    if tls is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*tls)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.bodies, srv.wire, srv.events, srv.last, srv.fail_first = [], [], [], {}, fail_first
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def playbook(stream):
    return {"uuid": stream, "path": "/p/site.yml", "runner_version": "2.14.0", "status": "running"}


class ShipperTest(unittest.TestCase):
    def setUp(self):
        self.spool = tempfile.mkdtemp(prefix="logbook-spool-")
        self.warnings = []

    def tearDown(self):
        shutil.rmtree(self.spool, ignore_errors=True)

    def shipper(self, url, **kw):
        return logbook.Shipper(url, spool_dir=self.spool, batch_interval=0.01, warn=self.warnings.append, **kw)

    def test_retries_the_same_batch_until_accepted(self):
        srv = serve(fail_first=2)
        self.addCleanup(srv.shutdown)
        s = self.shipper("http://127.0.0.1:%d" % srv.server_port)
        s.start(playbook("a"))
        for i in range(5):
            s.add({"kind": "record", "key": "k%d" % i, "value": i, "type": "text"})
        self.assertEqual(s.finish(20), 0)
        self.assertEqual(len(srv.bodies), 3, "two 503s, then accepted")
        self.assertEqual(len(set(srv.bodies)), 1, "retries send the same bytes (same seq)")
        self.assertEqual([e["key"] for e in srv.events], ["k0", "k1", "k2", "k3", "k4"])
        self.assertEqual(len([w for w in self.warnings if "503" in w]), 1, "one warning per kind")

    def test_unreachable_run_is_spooled_and_shipped_by_the_next(self):
        srv = serve()
        port = srv.server_port
        srv.shutdown()
        srv.server_close()
        s = self.shipper("http://127.0.0.1:%d" % port, batch_size=2)
        s.start(playbook("b"))
        for i in range(5):
            s.add({"kind": "record", "key": "k%d" % i, "value": i, "type": "text"})
        self.assertEqual(s.finish(0.5), 3)
        self.assertEqual(sorted(os.listdir(os.path.join(self.spool, "b"))),
                         [".lock", "0000000001.json.gz", "0000000002.json.gz", "0000000003.json.gz"])
        for fd in s.spool.locks.values():  # the run is over: its locks go with its process
            os.close(fd)
        srv = serve(port=port)
        self.addCleanup(srv.shutdown)
        nxt = self.shipper("http://127.0.0.1:%d" % port)
        nxt.start()
        self.assertEqual(nxt.finish(20), 0)
        self.assertEqual([e["key"] for e in srv.events], ["k0", "k1", "k2", "k3", "k4"])
        self.assertEqual(os.listdir(self.spool), [], "the spool is empty again")

    def test_a_batch_spooled_between_attempts_is_sent_as_the_same_bytes(self):
        # ~6 KB of JSON that gzip shrinks only by half: sent plain from memory (under 8 KB),
        # stored gzip-compressed in the spool, and plain again when the next run ships it.
        srv = serve(fail_first=1000)
        self.addCleanup(srv.shutdown)
        url = "http://127.0.0.1:%d" % srv.server_port
        s = self.shipper(url)
        s.start(playbook("c"))
        s.add({"kind": "record", "key": "blob", "value": os.urandom(3000).hex(), "type": "text"})
        self.assertEqual(s.finish(0.5), 1)
        for fd in s.spool.locks.values():
            os.close(fd)
        first = srv.wire[0]
        srv.fail_first = 0
        nxt = self.shipper(url)
        nxt.start()
        self.assertEqual(nxt.finish(20), 0)
        self.assertIsNone(first[0], "a body under 8 KB is sent without Content-Encoding")
        self.assertEqual(srv.wire[-1], first, "the shipped spool file is sent as the bytes first sent from memory")
        self.assertEqual([e["key"] for e in srv.events], ["blob"])

    def free_port(self):
        srv = serve()
        port = srv.server_port
        srv.shutdown()
        srv.server_close()
        return port

    def serve_later(self, port, after):
        """A server on `port` from `after` s on (nothing listens there before)."""
        started = []
        timer = threading.Timer(after, lambda: started.append(serve(port=port)))
        timer.start()

        def stop():
            timer.cancel()
            timer.join()
            for srv in started:
                srv.shutdown()
                srv.server_close()
        self.addCleanup(stop)
        return started

    def test_a_server_that_cannot_be_connected_to_is_given_up_after_unreachable_timeout(self):
        # flush_timeout (30 s) would cover the server's return (5 s); unreachable_timeout (0.3 s) does not
        port = self.free_port()
        started = self.serve_later(port, 5.0)
        s = self.shipper("http://127.0.0.1:%d" % port, unreachable_timeout=0.3)
        s.start(playbook("d"))
        s.add({"kind": "record", "key": "k", "value": 1, "type": "text"})
        self.assertEqual(s.finish(30), 1, "spooled: given up before the server was back")
        self.assertEqual(started, [], "given up before the server was back")
        self.assertTrue(any(w.startswith("logbook: cannot connect to the server at http://127.0.0.1:%d; 1 batch(es) wait in %s" % (port, self.spool))
                            and " ship)" in w for w in self.warnings), self.warnings)

    def test_a_server_back_within_unreachable_timeout_gets_the_rest(self):
        # refused at first; back 1 s into the end wait: the retries go on (at least once a second) and deliver
        port = self.free_port()
        started = self.serve_later(port, 1.0)
        s = self.shipper("http://127.0.0.1:%d" % port, unreachable_timeout=20)
        s.start(playbook("e"))
        s.add({"kind": "record", "key": "k", "value": 1, "type": "text"})
        self.assertEqual(s.finish(30), 0)
        self.assertEqual([e["key"] for e in started[0].events], ["k"])
        self.assertTrue(any("cannot reach" in w for w in self.warnings), self.warnings)

    def test_a_server_answering_503_gets_the_whole_flush_timeout(self):
        # it answers: not "away", so unreachable_timeout (0 here) does not cut the end wait short
        srv = serve(fail_first=5)
        self.addCleanup(srv.shutdown)
        s = self.shipper("http://127.0.0.1:%d" % srv.server_port, unreachable_timeout=0)
        s.start(playbook("f"))
        s.add({"kind": "record", "key": "k", "value": 1, "type": "text"})
        self.assertEqual(s.finish(30), 0)
        self.assertEqual(len(srv.bodies), 6, "five 503s, then accepted")
        self.assertEqual([e["key"] for e in srv.events], ["k"])

    def test_ctrl_c_while_the_end_wait_takes_its_lock_back_still_spools_the_rest(self):
        # Condition.wait() gives the lock up, waits, and takes it back in a `finally`:
        # a Ctrl-C landing in that last step leaves it released. Played here by a
        # wait that raises KeyboardInterrupt with the lock released, as that one does.
        port = self.free_port()
        s = self.shipper("http://127.0.0.1:%d" % port, unreachable_timeout=30)
        s.start(playbook("g"))
        s.add({"kind": "record", "key": "k", "value": 1, "type": "text"})
        real_wait = s.cond.wait
        calls = []

        def interrupted_wait(timeout=None):
            if threading.current_thread() is not threading.main_thread():
                return real_wait(timeout)
            calls.append(timeout)
            s.cond.release()
            raise KeyboardInterrupt
        s.cond.wait = interrupted_wait
        self.assertEqual(s.finish(30), 1, "the rest is spooled, not lost to a RuntimeError")
        self.assertEqual(len(calls), 1)
        self.assertEqual(len(os.listdir(os.path.join(self.spool, "g"))), 2, "the lock file and the batch")
        self.assertTrue(any(w.startswith("logbook: interrupted; 1 batch(es) wait in") for w in self.warnings), self.warnings)

    def test_tls_verifies_with_a_ca_file_or_not_at_all(self):
        if shutil.which("openssl") is None:
            self.skipTest("openssl is not installed")
        cert, key = os.path.join(self.spool, "cert.pem"), os.path.join(self.spool, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        srv = serve(tls=(cert, key))
        self.addCleanup(srv.shutdown)
        url = "https://127.0.0.1:%d" % srv.server_port
        spool_root = self.spool
        for name, kw, ok in (("ca", {"ca_file": cert}, True), ("insecure", {"insecure": True}, True), ("verify", {}, False)):
            self.spool = os.path.join(spool_root, name)
            s = self.shipper(url, **kw)
            s.start(playbook(name))
            s.add({"kind": "record", "key": name, "value": 1, "type": "text"})
            self.assertEqual(s.finish(1.5 if not ok else 20) == 0, ok, name)
        self.assertEqual(sorted(e["key"] for e in srv.events), ["ca", "insecure"])
        self.assertTrue(any("CERTIFICATE_VERIFY_FAILED" in w for w in self.warnings), self.warnings)


if __name__ == "__main__":
    unittest.main()
