"""Independent NIP-17/NIP-44 implementation for the interop tests: nostr-sdk (rust-nostr) 0.45.1.
  wrap SENDER_SECRET_HEX RECEIVER_PUBKEY_HEX MESSAGE  -> prints the kind-1059 gift wrap JSON
  unwrap RECEIVER_SECRET_HEX  (gift wrap JSON on stdin) -> prints 'SENDER <hex>' and 'MESSAGE <text>'"""
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
