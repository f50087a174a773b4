"""A server on 127.0.0.1 that stands for someone else's: it records every connection and
request it gets and answers like an OpenAI-compatible provider. Tests that a call or a key
must not leave for such a server assert that it heard nothing (the `listener` fixture)."""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Listener(ThreadingHTTPServer):
    """Records every connection and request; answers like an OpenAI-compatible server."""

    daemon_threads = True

    def __init__(self):
        self.connections = 0
        self.requests: list[dict] = []
        super().__init__(("127.0.0.1", 0), _Handler)

    def verify_request(self, request, client_address):
        self.connections += 1
        return True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.requests.append({"path": self.path, "headers": headers, "body": body.decode()})
        answer = json.dumps(
            {
                "id": "chatcmpl-listener",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4.1-mini",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "the listener's answer"},
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass
