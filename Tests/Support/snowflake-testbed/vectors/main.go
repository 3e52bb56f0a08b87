// Captures wire-format vectors for Postern's snowflake client from the Go implementations that
// Debian ships (golang-snowflake-dev 2.5.1, kcp-go 5.6.1, smux 1.5.16, pion/webrtc v3), and
// prints them as one JSON document (stdout). Tests/SnowflakeTests/Vectors/snowflake-go.json is
// its output; regenerate with
//
//	Tests/Support/snowflake-testbed/build.sh .build/snowflake-go vectors
//	scripts/testbed exec .build/snowflake-go/snowflake-test-vectors > Tests/SnowflakeTests/Vectors/snowflake-go.json
//
// Run it inside the test bed's namespace (only lo): pion gathers ICE candidates for the sample
// offer, and there the only one is the server-reflexive 127.x candidate from the test bed's STUN
// server (TB_SNOWFLAKE_STUN; none without it).
//
// With -amp-cache-urls it prints instead the AMP cache URL vectors (amp.CacheURL, content type
// "c"), Tests/SnowflakeTests/Vectors/amp-cache-urls.json; no namespace needed:
//
//	.build/snowflake-go/snowflake-test-vectors -amp-cache-urls > Tests/SnowflakeTests/Vectors/amp-cache-urls.json
//
// KCP and smux vectors are real traffic between two upstream endpoints over in-memory carriers,
// recorded packet by packet (KCP) and write by write (smux); timestamps differ on every run.
package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/amp"
	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/encapsulation"
	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/messages"
	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/turbotunnel"
	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/util"
	"github.com/pion/webrtc/v3"
	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"
)

type encapsulationVector struct {
	Kind   string `json:"kind"` // "data" or "padding"
	Length int    `json:"length"`
	Prefix string `json:"prefixHex"`
	// Full encoding, for short chunks only; data bytes are i mod 251.
	Encoded string `json:"encodedHex,omitempty"`
}

type pollRequestVector struct {
	Offer       string `json:"offer"`
	NAT         string `json:"nat"`
	Fingerprint string `json:"fingerprint"`
	Encoded     string `json:"encoded"`
}

type packet struct {
	Direction string `json:"direction"` // "c2s" or "s2c"
	Hex       string `json:"hex"`
}

type vectors struct {
	Source        string                `json:"source"`
	Token         string                `json:"turbotunnelTokenHex"`
	Encapsulation []encapsulationVector `json:"encapsulation"`
	// Several chunks written back to back by WriteData/WritePadding and what ReadData returns.
	EncapsulationStream struct {
		Hex     string   `json:"hex"`
		Packets []string `json:"packetsHex"`
	} `json:"encapsulationStream"`

	SessionDescription struct {
		Type       string `json:"type"`
		SDP        string `json:"sdp"`
		Serialized string `json:"serialized"`
	} `json:"sessionDescription"`
	PollRequests  []pollRequestVector `json:"pollRequests"`
	PollResponses []struct {
		Answer  string `json:"answer"`
		Error   string `json:"error"`
		Encoded string `json:"encoded"`
	} `json:"pollResponses"`
	AMPPath struct {
		Path string `json:"path"`
		Data string `json:"data"`
	} `json:"ampPath"`
	AMPArmor struct {
		Body    string `json:"body"`
		Encoded string `json:"encoded"`
	} `json:"ampArmor"`
	// A complete offer from pion (DataChannel created first, gathering complete), as the Go client
	// would send it: real proxies answer it.
	PionOffer string `json:"pionOfferSerialized"`

	KCP struct {
		Conv    uint32   `json:"conv"`
		Writes  []string `json:"clientWritesHex"`
		Packets []packet `json:"packets"`
	} `json:"kcp"`
	Smux struct {
		Writes []packet `json:"writes"`
		Note   string   `json:"note"`
	} `json:"smux"`
}

func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i % 251)
	}
	return p
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func captureEncapsulation(v *vectors) {
	for _, n := range []int{0, 1, 5, 63, 64, 100, 127, 128, 1376, 1400, 8191, 8192, 16383, 16384, 100000, 1048575} {
		var buf bytes.Buffer
		_, err := encapsulation.WriteData(&buf, pattern(n))
		must(err)
		e := encapsulationVector{Kind: "data", Length: n, Prefix: hex.EncodeToString(buf.Bytes()[:buf.Len()-n])}
		if n <= 128 {
			e.Encoded = hex.EncodeToString(buf.Bytes())
		}
		v.Encapsulation = append(v.Encapsulation, e)
	}
	// Padding of total size n (prefixes included): the prefix of its first chunk.
	for _, n := range []int{0, 1, 10, 64, 65, 300, 1024, 1025, 8193} {
		var buf bytes.Buffer
		_, err := encapsulation.WritePadding(&buf, n)
		must(err)
		// WritePadding(n) writes n bytes in total, prefix included.
		e := encapsulationVector{Kind: "padding", Length: n, Prefix: hex.EncodeToString(buf.Bytes()[:min(3, buf.Len())])}
		if n <= 300 {
			e.Encoded = hex.EncodeToString(buf.Bytes())
		}
		v.Encapsulation = append(v.Encapsulation, e)
	}
	var stream bytes.Buffer
	encapsulation.WriteData(&stream, []byte("first"))
	encapsulation.WritePadding(&stream, 7)
	encapsulation.WriteData(&stream, pattern(200))
	encapsulation.WriteData(&stream, nil)
	encapsulation.WritePadding(&stream, 70)
	encapsulation.WriteData(&stream, []byte("last"))
	v.EncapsulationStream.Hex = hex.EncodeToString(stream.Bytes())
	r := bytes.NewReader(stream.Bytes())
	for {
		p, err := encapsulation.ReadData(r)
		if err == io.EOF {
			break
		}
		must(err)
		v.EncapsulationStream.Packets = append(v.EncapsulationStream.Packets, hex.EncodeToString(p))
	}
}

func min(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func captureBroker(v *vectors) {
	sdp := "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
		"a=candidate:1 1 udp 2130706431 127.0.5.2 40000 typ srflx raddr 0.0.0.0 rport 40000\r\n"
	desc := webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: sdp}
	serialized, err := util.SerializeSessionDescription(&desc)
	must(err)
	v.SessionDescription.Type = "offer"
	v.SessionDescription.SDP = sdp
	v.SessionDescription.Serialized = serialized

	requests := []messages.ClientPollRequest{
		{Offer: serialized, NAT: "unknown", Fingerprint: "2B280B23E1107BB62ABFC40DDCC8824814F80A72"},
		// Empty fingerprint: the Go client fills in the default.
		{Offer: serialized, NAT: "restricted", Fingerprint: ""},
		// Go's encoder escapes <, >, & and U+2028/U+2029 as \u00xx.
		{Offer: `{"type":"offer","sdp":"a<b>&c` + "\u2028\u2029\u00e9\x01\t" + `"}`, NAT: "unrestricted",
			Fingerprint: "8838024498816A039FCBBAB14E6F40A0843051FA"},
	}
	for _, req := range requests {
		orig := req
		encoded, err := req.EncodeClientPollRequest()
		must(err)
		v.PollRequests = append(v.PollRequests, pollRequestVector{
			Offer: orig.Offer, NAT: orig.NAT, Fingerprint: orig.Fingerprint, Encoded: string(encoded),
		})
	}
	for _, resp := range []messages.ClientPollResponse{
		{Answer: `{"type":"answer","sdp":"v=0\r\n"}`},
		{Error: messages.StrNoProxies},
		{Error: messages.StrTimedOut},
	} {
		encoded, err := resp.EncodePollResponse()
		must(err)
		v.PollResponses = append(v.PollResponses, struct {
			Answer  string `json:"answer"`
			Error   string `json:"error"`
			Encoded string `json:"encoded"`
		}{resp.Answer, resp.Error, string(encoded)})
	}
	data := []byte("1.0\n" + `{"offer":"x","nat":"unknown","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}`)
	v.AMPPath.Path = amp.EncodePath(data)
	v.AMPPath.Data = string(data)

	body, err := (&messages.ClientPollResponse{Answer: serialized}).EncodePollResponse()
	must(err)
	var armored bytes.Buffer
	enc, err := amp.NewArmorEncoder(&armored)
	must(err)
	_, err = enc.Write(body)
	must(err)
	must(enc.Close())
	v.AMPArmor.Body = string(body)
	v.AMPArmor.Encoded = armored.String()
}

func capturePionOffer(v *vectors) {
	config := webrtc.Configuration{}
	if stun := os.Getenv("TB_SNOWFLAKE_STUN"); stun != "" {
		config.ICEServers = []webrtc.ICEServer{{URLs: []string{stun}}}
	}
	pc, err := webrtc.NewPeerConnection(config)
	must(err)
	defer pc.Close()
	ordered := true
	_, err = pc.CreateDataChannel("snowflake-0123456789abcdef", &webrtc.DataChannelInit{Ordered: &ordered})
	must(err)
	offer, err := pc.CreateOffer(nil)
	must(err)
	done := webrtc.GatheringCompletePromise(pc)
	must(pc.SetLocalDescription(offer))
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		log.Fatal("ICE gathering did not complete")
	}
	s, err := util.SerializeSessionDescription(pc.LocalDescription())
	must(err)
	v.PionOffer = s
}

// memPacketConn is one end of an in-memory datagram link that records what it sends.
type memPacketConn struct {
	name   string
	in     chan []byte
	peer   *memPacketConn
	record func(direction string, p []byte)
	closed chan struct{}
	once   sync.Once
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

func (c *memPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case b := <-c.in:
		return copy(p, b), memAddr(c.peer.name), nil
	case <-c.closed:
		return 0, nil, io.EOF
	}
}
func (c *memPacketConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	b := append([]byte(nil), p...)
	c.record(c.name, b)
	select {
	case c.peer.in <- b:
	case <-c.closed:
	}
	return len(p), nil
}
func (c *memPacketConn) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }
func (c *memPacketConn) LocalAddr() net.Addr              { return memAddr(c.name) }
func (c *memPacketConn) SetDeadline(time.Time) error      { return nil }
func (c *memPacketConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memPacketConn) SetWriteDeadline(time.Time) error { return nil }

func captureKCP(v *vectors) {
	var mu sync.Mutex
	record := func(direction string, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		d := "c2s"
		if direction == "server" {
			d = "s2c"
		}
		v.KCP.Packets = append(v.KCP.Packets, packet{d, hex.EncodeToString(p)})
	}
	client := &memPacketConn{name: "client", in: make(chan []byte, 1024), record: record, closed: make(chan struct{})}
	server := &memPacketConn{name: "server", in: make(chan []byte, 1024), record: record, closed: make(chan struct{})}
	client.peer, server.peer = server, client

	ln, err := kcp.ServeConn(nil, 0, 0, server)
	must(err)
	const conv = 0x0a0b0c0d
	v.KCP.Conv = conv
	conn, err := kcp.NewConn3(conv, memAddr("server"), nil, 0, 0, client)
	must(err)
	for _, c := range []*kcp.UDPSession{conn} {
		c.SetStreamMode(true)
		c.SetWindowSize(65535, 65535)
		c.SetNoDelay(0, 0, 0, 1)
	}
	received := make(chan int, 1)
	go func() {
		s, err := ln.AcceptKCP()
		must(err)
		s.SetStreamMode(true)
		s.SetWindowSize(65535, 65535)
		s.SetNoDelay(0, 0, 0, 1)
		buf := make([]byte, 65536)
		total := 0
		for total < 5+3000 {
			n, err := s.Read(buf)
			must(err)
			total += n
		}
		_, err = s.Write([]byte("reply"))
		must(err)
		received <- total
	}()
	writes := [][]byte{[]byte("hello"), pattern(3000)}
	for _, w := range writes {
		v.KCP.Writes = append(v.KCP.Writes, hex.EncodeToString(w))
		_, err := conn.Write(w)
		must(err)
		time.Sleep(50 * time.Millisecond)
	}
	<-received
	buf := make([]byte, 16)
	n, err := conn.Read(buf)
	must(err)
	if string(buf[:n]) != "reply" {
		log.Fatalf("kcp reply %q", buf[:n])
	}
	time.Sleep(200 * time.Millisecond) // let the last ACKs go out
	mu.Lock()
	conn.Close()
	ln.Close()
	mu.Unlock()
}

// recordingConn records every Write (smux writes one frame per call) and forwards to a pipe.
type recordingConn struct {
	net.Conn
	direction string
	record    func(string, []byte)
}

func (c recordingConn) Write(p []byte) (int, error) {
	c.record(c.direction, append([]byte(nil), p...))
	return c.Conn.Write(p)
}

func captureSmux(v *vectors) {
	var mu sync.Mutex
	stop := false
	record := func(direction string, p []byte) {
		mu.Lock()
		defer mu.Unlock()
		if !stop {
			v.Smux.Writes = append(v.Smux.Writes, packet{direction, hex.EncodeToString(p)})
		}
	}
	a, b := net.Pipe()
	clientConfig := smux.DefaultConfig()
	clientConfig.Version = 2
	clientConfig.MaxStreamBuffer = 1048576
	clientConfig.KeepAliveInterval = 300 * time.Millisecond
	serverConfig := smux.DefaultConfig()
	serverConfig.Version = 2
	serverConfig.MaxStreamBuffer = 1048576
	client, err := smux.Client(recordingConn{a, "c2s", record}, clientConfig)
	must(err)
	server, err := smux.Server(recordingConn{b, "s2c", record}, serverConfig)
	must(err)
	done := make(chan struct{})
	go func() {
		s, err := server.AcceptStream()
		must(err)
		buf := make([]byte, 100)
		n, err := io.ReadFull(s, buf[:5])
		must(err)
		_, err = s.Write(buf[:n])
		must(err)
		s.Close()
		close(done)
	}()
	stream, err := client.OpenStream()
	must(err)
	_, err = stream.Write([]byte("hello"))
	must(err)
	echo := make([]byte, 5)
	_, err = io.ReadFull(stream, echo)
	must(err)
	<-done
	stream.Close()
	time.Sleep(450 * time.Millisecond) // one client keepalive NOP
	mu.Lock()
	stop = true
	mu.Unlock()
	client.Close()
	server.Close()
	v.Smux.Note = "client: OpenStream, Write(hello), read echo, Close; server: AcceptStream, read 5, echo, Close; client keepalive 300 ms"
}

// ampCacheURLVectors: publisher (broker) URL + cache URL -> amp.CacheURL(pub, cache, "c"), or the
// error upstream returns.
func ampCacheURLVectors() {
	type vector struct {
		Broker string `json:"broker"`
		Cache  string `json:"cache"`
		Result string `json:"result,omitempty"`
		Error  bool   `json:"error,omitempty"`
	}
	pairs := [][2]string{
		{"https://snowflake-broker.torproject.net/amp/client/0AAAAAAAAAAAA/MS4wCnt9", "https://cdn.ampproject.org/"},
		{"https://snowflake-broker.torproject.net/amp/client/0AAAAAAAAAAAA/MS4wCnt9", "https://cdn.ampproject.org"},
		{"https://snowflake-broker.test/amp/client/0AAAAAAAAAAAA/MS4wCnt9", "https://amp-cache.test/"},
		{"http://127.0.5.1/amp/client/0AAAAAAAAAAAA/MS4wCnt9", "http://amp-cache.test:8080/sub/dir/"},
		{"https://broker.example/some/path/amp/client/0x/eA", "https://cache.example/"},
		{"https://ab--cd.example/amp/client/0x/eA", "https://cache.example/"},
		{"https://a-b.example/amp/client/0x/eA", "https://cache.example/"},
		{"https://" + strings.Repeat("long-label.", 6) + "example/amp/client/0x/eA", "https://cache.example/"},
		{"https://broker.example:443/amp/client/0x/eA", "https://cache.example/"},
		{"https://broker.example:8443/amp/client/0x/eA", "https://cache.example/"},
		{"http://broker.example:8080/amp/client/0x/eA", "https://cache.example/"},
		{"https://broker.example/amp/client/0x/eA", "https://cache.example/?q=1"},
	}
	var out []vector
	for _, p := range pairs {
		pub, err1 := url.Parse(p[0])
		cache, err2 := url.Parse(p[1])
		if err1 != nil || err2 != nil {
			log.Fatalf("bad vector URLs %q %q", p[0], p[1])
		}
		v := vector{Broker: p[0], Cache: p[1]}
		if u, err := amp.CacheURL(pub, cache, "c"); err != nil {
			v.Error = true
		} else {
			v.Result = u.String()
		}
		out = append(out, v)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]interface{}{
		"source":  "Debian bookworm golang-snowflake-dev 2.5.1-1 common/amp.CacheURL(pub, cache, \"c\"); captured by Tests/Support/snowflake-testbed/vectors/main.go -amp-cache-urls",
		"vectors": out,
	}); err != nil {
		log.Fatal(err)
	}
}

func main() {
	log.SetFlags(0)
	if len(os.Args) > 1 && os.Args[1] == "-amp-cache-urls" {
		ampCacheURLVectors()
		return
	}
	var v vectors
	v.Source = "Debian bookworm: golang-snowflake-dev 2.5.1-1, golang-github-xtaci-kcp-dev 5.6.1-2, " +
		"golang-github-xtaci-smux-dev 1.5.16+ds-1, golang-github-pion-webrtc.v3-dev; go1.19; captured by " +
		"Tests/Support/snowflake-testbed/vectors/main.go"
	v.Token = hex.EncodeToString(turbotunnel.Token[:])
	captureEncapsulation(&v)
	captureBroker(&v)
	capturePionOffer(&v)
	captureKCP(&v)
	captureSmux(&v)
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	must(out.Encode(&v))
}
