#!/usr/bin/env python3
"""A stand-in for the outside world of junior benchmarks, in its own process: an
OpenAI-compatible chat-completions endpoint and a chat page for browser juniors.

    benches/fake_llm.py PORT

- POST /v1/chat/completions answers `echo: <prompt>` at once with usage
  (4 prompt + 6 completion tokens), as OpenAI, vLLM or llama.cpp's server would;
- GET /chat serves a chat page (textarea #msg, button #send, answers `.answer`) that
  answers `echo: <text>` 50 ms after the click.

Python's standard library only; one thread per connection.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = b"""<!doctype html><html><body>
<textarea id="msg"></textarea><button id="send">Send</button><div id="log"></div>
<script>
document.getElementById('send').addEventListener('click', () => {
  const text = document.getElementById('msg').value;
  setTimeout(() => {
    const d = document.createElement('div');
    d.className = 'answer';
    d.innerText = 'echo: ' + text;
    document.getElementById('log').appendChild(d);
  }, 50);
});
</script></body></html>"""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, kind):
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.startswith("/chat"):
            self.send(200, PAGE, "text/html")
        else:
            self.send(404, b"not found", "text/plain")

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        prompt = body.get("messages", [{}])[0].get("content", "")
        answer = {
            "id": "cmpl-1",
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "echo: " + prompt}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10},
        }
        self.send(200, json.dumps(answer).encode(), "application/json")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
