"""A cloud metadata endpoint stand-in on 127.0.0.1 for spot-interruption tests.

GET of any path answers 404 while --notice-file does not exist, then 200 with the file's
content (AWS's instance-action JSON, or GCP's "TRUE"). Writes its port to --port-file, and
serves until killed (or 120 s).
"""
import argparse
import http.server
import os
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--notice-file", required=True)
    a = ap.parse_args()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if not os.path.exists(a.notice_file):
                self.send_response(404)
                self.end_headers()
                return
            body = open(a.notice_file, "rb").read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    server.timeout = 0.5
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, a.port_file)
    end = time.time() + 120
    while time.time() < end:
        server.handle_request()


if __name__ == "__main__":
    main()
