"""Independent NIP-17/NIP-44 implementation for the interop tests: nostr-sdk (rust-nostr) 0.45.1.
  wrap SENDER_SECRET_HEX RECEIVER_PUBKEY_HEX MESSAGE  -> prints the kind-1059 gift wrap JSON
  unwrap RECEIVER_SECRET_HEX  (gift wrap JSON on stdin) -> prints 'SENDER <hex>' and 'MESSAGE <text>'
  read RELAY_URL RECEIVER_SECRET_HEX SECONDS -> the stored gift wraps to the key, opened, as above"""
import sys
import nostr_sdk as n

mode = sys.argv[1]
if mode == "wrap":
    keys = n.Keys.parse(sys.argv[2])
    event = n.nip17_make_private_msg(keys, n.PublicKey.parse(sys.argv[3]), sys.argv[4])
    print(event.as_json(), flush=True)
elif mode == "unwrap":
    keys = n.Keys.parse(sys.argv[2])
    wrap = n.Event.from_json(sys.stdin.read())
    gift = n.UnwrappedGift.from_gift_wrap(keys, wrap)
    print("SENDER " + gift.sender().to_hex(), flush=True)
    print("KIND " + str(gift.rumor().kind().as_u16()), flush=True)
    print("MESSAGE " + gift.rumor().content(), flush=True)
elif mode == "read":
    # read RELAY_URL RECEIVER_SECRET_HEX SECONDS: asks the relay (REQ over a plain websockets
    # client, not Postern's) for gift wraps to the key and prints each one nostr-sdk opens.
    import json
    import time
    from websockets.sync.client import connect
    keys = n.Keys.parse(sys.argv[3])
    deadline = time.monotonic() + float(sys.argv[4])
    opened = 0
    with connect(sys.argv[2], open_timeout=10) as socket:
        socket.send(json.dumps(["REQ", "reader", {"kinds": [1059], "#p": [keys.public_key().to_hex()]}]))
        while time.monotonic() < deadline:
            try:
                message = json.loads(socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            except TimeoutError:
                break
            if message[0] == "EOSE":
                break
            if message[0] != "EVENT":
                continue
            gift = n.UnwrappedGift.from_gift_wrap(keys, n.Event.from_json(json.dumps(message[2])))
            print("SENDER " + gift.sender().to_hex(), flush=True)
            print("MESSAGE " + gift.rumor().content(), flush=True)
            opened += 1
    sys.exit(0 if opened else 1)
