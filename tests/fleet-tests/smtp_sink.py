"""The notification tests' mail sink: aiosmtpd, a real SMTP server, on loopback; every
message it accepts is written, decoded, as one JSON file in the given directory
(message_id, subject, from, to, the plain-text body), for the test to read.

usage: smtp_sink.py PORT DIR   (prints "listening" once it accepts connections)
"""

import email
import email.policy
import json
import os
import sys
import threading
import uuid

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, directory):
        self.directory = directory

    async def handle_DATA(self, server, session, envelope):
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        body = msg.get_body(preferencelist=("plain",))
        record = {
            "message_id": msg["Message-ID"],
            "subject": msg["Subject"],
            "from": msg["From"],
            "to": envelope.rcpt_tos,
            "body": body.get_content() if body is not None else "",
            "raw": envelope.content.decode("utf-8", "replace"),
        }
        name = os.path.join(self.directory, uuid.uuid4().hex)
        with open(name + ".tmp", "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.rename(name + ".tmp", name + ".json")
        return "250 OK"


def main():
    port, directory = int(sys.argv[1]), sys.argv[2]
    controller = Controller(Sink(directory), hostname="127.0.0.1", port=port)
    controller.start()
    print("listening", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
