"""A one-request webhook receiver on 127.0.0.1 for tests, over http or (with --cert/--key) https.

Writes the port it listens on to --port-file once listening, and the request it got
({method, path, headers, body}) to --out; answers 204. Exits after one request or 60 s.
"""
import argparse
import http.server
import json
import os
import ssl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cert")
    ap.add_argument("--key")
    a = ap.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
            record = {"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body}
            tmp = a.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(record, f)
            os.rename(tmp, a.out)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    server.timeout = 60
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, a.port_file)
    server.handle_request()


if __name__ == "__main__":
    main()
