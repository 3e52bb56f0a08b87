#!/usr/bin/env bash
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd); mkdir -p "$here/pcap"
# usage: cap.sh NAME PORT -- client command...   (server must already listen on PORT)
name=$1; port=$2; shift 3
f=$here/pcap/$name.pcap; rm -f $f
tshark -q -i lo -f "port $port" -w $f 2>/dev/null &
tp=$!
for i in $(seq 50); do [ -s $f ] && break; sleep 0.2; done; sleep 1
"$@"
sleep 1
kill $tp; wait $tp 2>/dev/null
python3 $here/ja4.py $f
