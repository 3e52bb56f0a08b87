#!/usr/bin/env bash
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); mkdir -p "$here/pcap"
name=$1; mode=$2; port=$3
f=$here/pcap/$name.pcap; rm -f $f
tshark -q -i lo -f "udp port $port" -w $f 2>/dev/null & tp=$!
for i in $(seq 50); do [ -s $f ] && break; sleep 0.2; done; sleep 1
cd $here; ./boring_dtls_server $port & sp=$!; sleep 0.5
timeout 5 openssl s_client -dtls1_2 -connect 127.0.0.1:$port -use_srtp SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80 -cert ccert.pem -key ckey.pem \
  -cipher ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES256-SHA:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384 \
  -groups X25519:P-256:P-384 -sigalgs ECDSA+SHA256:ECDSA+SHA384:ECDSA+SHA512:RSA+SHA256:RSA+SHA384:RSA+SHA512:ed25519 -no_ticket </dev/null >/dev/null 2>&1
wait $sp; sleep 1; kill $tp; wait $tp 2>/dev/null
tshark -r $f -Y "dtls.handshake.type==2 || dtls.handshake.type==13" -T fields -E separator='|' -e dtls.handshake.type -e dtls.handshake.session_id_length -e dtls.handshake.ciphersuite -e dtls.handshake.extension.type -e dtls.handshake.extensions_ec_point_format -e dtls.handshake.extension.srtp.protection_profile -e dtls.handshake.cert_type -e dtls.handshake.sig_hash_alg -e dtls.handshake.ja3s_full -e dtls.handshake.ja3s 2>/dev/null
