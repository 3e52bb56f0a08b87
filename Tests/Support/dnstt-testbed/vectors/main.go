// Command dnstt-test-vectors prints wire-format vectors for Postern's dnstt client as one JSON
// document on stdout. Tests/DnsttTests/Vectors/dnstt-go.json is its output, checked in so the Swift
// tests need no Go; regenerate with
//
//	Tests/Support/dnstt-testbed/build.sh .build/dnstt-go vectors
//	.build/dnstt-go/dnstt-test-vectors > Tests/DnsttTests/Vectors/dnstt-go.json
//
// Sources: Noise from flynn/noise 1.0.0 and KCP from kcp-go 5.6.1 (Debian 12's, the libraries dnstt
// uses); DNS messages from the test bed's own codec (../dnsttbed, ours), which this tool first checks
// byte for byte against the vectors of the project's dnstt notes §7.2 (computed there with upstream
// dnstt's dns package) and their §6.4/§7.1 tables: if any differs, it prints nothing and exits 1.
// The Noise handshake is compared with the notes' §7.3 values, made with an independent Python
// implementation; the result is recorded in noise.matchesNotes (the file is written either way,
// flynn being the library dnstt links).
//
// Fields (hex strings are lower case; "…Hex" names hold hex):
//
//	generator, sources                 what made the file
//	capacities[]                       domain, queryCapacity (payload bytes per query name),
//	                                   clientKCPMTU (capacity − 13): notes §2.2 / §7.1
//	serverMTU[]                        mtu (the server's -mtu), maxTXTPayload, kcpMTU (= payload − 2):
//	                                   notes §6.4
//	queries[]                          name (what the case is), clientIDHex, paddingHex, packetHex
//	                                   (null: an empty poll), id, domain, payloadHex (the decoded
//	                                   query payload, notes §2.1), qname (notes §2.2), wireHex (the
//	                                   whole query message, notes §2.3), nameOctets, wireLength; the
//	                                   last, kcp-go-first-packet-in-query, carries kcp.packets[0] and
//	                                   so changes with its ts
//	responses[]                        name, queryWireHex (the query answered), packetsHex (downstream
//	                                   packets in order), rcode, aa, wireHex (the server's answer,
//	                                   notes §3.1), payloadHex (the TXT payload: [u16 BE len][packet]…)
//	txtPayloads[]                      name, payloadHex, rdataHex: payloads split into TXT
//	                                   character-strings (255-byte chunks, then 0-255)
//	splitPackets[]                     name, payloadHex, packetsHex: what a client reads from a TXT
//	                                   payload (a trailing partial packet is dropped, notes §3.2)
//	noise                              prologue(Hex), serverStaticPrivateHex, serverStaticPublicHex
//	                                   (the pubkey= value), clientEphemeralPrivateHex,
//	                                   serverEphemeralPrivateHex (fed to flynn through Config.Random),
//	                                   message1Hex, message2Hex (48 bytes each, empty payloads),
//	                                   handshakeHashHex, clientToServer[] and serverToClient[]
//	                                   ({plaintextHex, ciphertextHex, framedHex = [u16 BE len][ct]}, in
//	                                   nonce order from 0), streamHex (what the client's KCP stream
//	                                   carries: msg1 and client messages, each framed),
//	                                   chunkedWrite ({plaintextLength, framesHex}: one 5000-byte
//	                                   server write cut into 4096 + 904-byte plaintexts), matchesNotes
//	kcp                                conv (fixed, 0x04030201), clientMTU (134, t.example.com),
//	                                   serverMTU (932), packets[]: {direction "c2s"|"s2c", hex,
//	                                   segments[] {conv, cmd, frg, wnd, ts, sn, una, dataHex}}: real
//	                                   traffic between a kcp-go client (NewConn3) and kcp-go's listener
//	                                   with dnstt's settings over in-memory carriers, for these writes:
//	                                   client 50 bytes (a framed Noise message 1), server 50, server
//	                                   3000 (cut at MTU 932), client 300 (cut at MTU 134). ts values
//	                                   differ between runs; ACK segments interleave as kcp-go sent them
//	kcpInQuery                         the first c2s KCP packet above as a data query: clientIDHex,
//	                                   paddingHex, packetHex, qname, wireHex (domain t.example.com)
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"dnsttbed"

	"github.com/flynn/noise"
	"github.com/miekg/dns"
	"github.com/xtaci/kcp-go/v5"
)

type capacity struct {
	Domain        string `json:"domain"`
	QueryCapacity int    `json:"queryCapacity"`
	ClientKCPMTU  int    `json:"clientKCPMTU"`
}

type serverMTU struct {
	MTU           int `json:"mtu"`
	MaxTXTPayload int `json:"maxTXTPayload"`
	KCPMTU        int `json:"kcpMTU"`
}

type query struct {
	Name       string  `json:"name"`
	ClientID   string  `json:"clientIDHex"`
	Padding    string  `json:"paddingHex"`
	Packet     *string `json:"packetHex"`
	ID         uint16  `json:"id"`
	Domain     string  `json:"domain"`
	Payload    string  `json:"payloadHex"`
	QName      string  `json:"qname"`
	Wire       string  `json:"wireHex"`
	NameOctets int     `json:"nameOctets"`
	WireLength int     `json:"wireLength"`
}

type response struct {
	Name      string   `json:"name"`
	QueryWire string   `json:"queryWireHex"`
	Packets   []string `json:"packetsHex"`
	Rcode     int      `json:"rcode"`
	AA        bool     `json:"aa"`
	Wire      string   `json:"wireHex"`
	Payload   string   `json:"payloadHex"`
}

type txtPayload struct {
	Name    string `json:"name"`
	Payload string `json:"payloadHex"`
	RData   string `json:"rdataHex"`
}

type splitCase struct {
	Name    string   `json:"name"`
	Payload string   `json:"payloadHex"`
	Packets []string `json:"packetsHex"`
}

type transportMessage struct {
	Plaintext  string `json:"plaintextHex"`
	Ciphertext string `json:"ciphertextHex"`
	Framed     string `json:"framedHex"`
}

type noiseVectors struct {
	Prologue               string             `json:"prologue"`
	PrologueHex            string             `json:"prologueHex"`
	ServerStaticPrivate    string             `json:"serverStaticPrivateHex"`
	ServerStaticPublic     string             `json:"serverStaticPublicHex"`
	ClientEphemeralPrivate string             `json:"clientEphemeralPrivateHex"`
	ServerEphemeralPrivate string             `json:"serverEphemeralPrivateHex"`
	Message1               string             `json:"message1Hex"`
	Message2               string             `json:"message2Hex"`
	HandshakeHash          string             `json:"handshakeHashHex"`
	ClientToServer         []transportMessage `json:"clientToServer"`
	ServerToClient         []transportMessage `json:"serverToClient"`
	Stream                 string             `json:"streamHex"`
	ChunkedWrite           struct {
		PlaintextLength int      `json:"plaintextLength"`
		Frames          []string `json:"framesHex"`
	} `json:"chunkedWrite"`
	MatchesNotes bool `json:"matchesNotes"`
}

type segment struct {
	Conv uint32 `json:"conv"`
	Cmd  byte   `json:"cmd"`
	Frg  byte   `json:"frg"`
	Wnd  uint16 `json:"wnd"`
	Ts   uint32 `json:"ts"`
	Sn   uint32 `json:"sn"`
	Una  uint32 `json:"una"`
	Data string `json:"dataHex"`
}

type kcpPacket struct {
	Direction string    `json:"direction"`
	Hex       string    `json:"hex"`
	Segments  []segment `json:"segments"`
}

type kcpVectors struct {
	Conv      uint32      `json:"conv"`
	ClientMTU int         `json:"clientMTU"`
	ServerMTU int         `json:"serverMTU"`
	Packets   []kcpPacket `json:"packets"`
}

type document struct {
	Generator    string            `json:"generator"`
	Sources      map[string]string `json:"sources"`
	Capacities   []capacity        `json:"capacities"`
	ServerMTU    []serverMTU       `json:"serverMTU"`
	Queries      []query           `json:"queries"`
	Responses    []response        `json:"responses"`
	TXTPayloads  []txtPayload      `json:"txtPayloads"`
	SplitPackets []splitCase       `json:"splitPackets"`
	Noise        noiseVectors      `json:"noise"`
	KCP          kcpVectors        `json:"kcp"`
	KCPInQuery   query             `json:"kcpInQuery"`
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "dnstt-test-vectors: "+format+"\n", args...)
	os.Exit(1)
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func unhex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	must(err)
	return b
}

func sequence(first byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = first + byte(i)
	}
	return out
}

// pattern gives n reproducible bytes (i*7+seed mod 256).
func pattern(seed byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(i*7) + seed
	}
	return out
}

func hexes(packets [][]byte) []string {
	out := []string{}
	for _, p := range packets {
		out = append(out, hex.EncodeToString(p))
	}
	return out
}

// The notes' §7.2 vectors (upstream dnstt's dns package).
const (
	notesVector1 = `1234010000010000000000013f696e676573726b6f6b7265756a79367a756d6b73653433766f627378657933626e72
75776d3474626d35757779326c746f727577677a6c796f6275776333640d6a6d72787767326c706f767a7101740765
78616d706c6503636f6d00001000010000291000000000000000`
	notesVector1Name = "ingesrkokreujy6zumkse43vobsxey3bnruwm4tbm5uwy2ltoruwgzlyobuwc3d.jmrxwg2lpovzq.t.example.com"
	notesVector2     = `abcd010000010000000000011c616572756b7a346a76706736373261616165626167626166617964710174076578
616d706c6503636f6d00001000010000291000000000000000`
	notesVector2Name = "aerukz4jvpg672aaaebagbafaydq.t.example.com"
	notesVector3     = `abcd840000010001000000011c616572756b7a346a76706736373261616165626167626166617964710174076578
616d706c6503636f6d0000100001c00c001000010000003c000f0e000568656c6c6f0005776f726c640000291000
000000000000`
	notesKCPSegment   = "01020304 51 00 4000 64000000 00000000 00000000 02000000 0030"
	notesKCPQueryName = "aerukz4jvpg67y5kxpgbuaicamcfcacaabsaaaaaaaaaaaaaaaaaaaqaaaaaama.t.example.com"
	// Notes §7.3.
	notesMessage1 = "5869aff450549732cbaaed5e5df9b30a6da31cb0e5742bad5ad4a1a768f1a67b1708678541fa2c10575a9363241a0bf9"
	notesMessage2 = "64b101b1d0be5a8704bd078f9895001fc03e8e9f9522f188dd128d9846d484661bedc42c3cb457e78bb1f9011792e301"
	notesHash     = "7f0e30a01b4bde60a97eaa3801f5d4b395ff4014bcf1bdf82f6e7633ff56667a"
	notesPublic   = "07a37cbc142093c8b755dc1b10e86cb426374ad16aa853ed0bdfc0b2b86d1c7c"
	notesCT0      = "c7f5e19ba3c314d79d87c656c430ea4fd06c0ad52689f7f9"
	notesCT1      = "c4c8ad619530cdb9c89508ab497f8fe683cd864e9e280de01825f7cf55"
)

func makeQuery(name string, id dnsttbed.ClientID, padding, packet []byte, queryID uint16, domain string) query {
	payload := dnsttbed.QueryPayload(id, padding, packet)
	qname := dnsttbed.QueryName(payload, domain)
	wire, err := dnsttbed.QueryMessage(queryID, qname)
	must(err)
	q := query{Name: name, ClientID: hex.EncodeToString(id[:]), Padding: hex.EncodeToString(padding), ID: queryID,
		Domain: domain, Payload: hex.EncodeToString(payload), QName: qname, Wire: hex.EncodeToString(wire),
		NameOctets: len(qname) + 2, WireLength: len(wire)}
	if packet != nil {
		h := hex.EncodeToString(packet)
		q.Packet = &h
	}
	return q
}

func makeResponse(name string, queryWire []byte, packets [][]byte, rcode int, aa bool) response {
	msg := new(dns.Msg)
	must(msg.Unpack(queryWire))
	withOPT := false
	for _, rr := range msg.Extra {
		if _, ok := rr.(*dns.OPT); ok {
			withOPT = true
		}
	}
	payload := dnsttbed.PacketsPayload(packets)
	wire, err := dnsttbed.Response(msg, rcode, aa, withOPT, payload)
	must(err)
	if rcode == dns.RcodeSuccess {
		// The bed's client parser must read back what the server wrote.
		labels := dns.SplitDomainName(msg.Question[0].Name)
		domain := labels[len(labels)-3:]
		got, err := dnsttbed.ResponsePayload(wire, domain)
		must(err)
		if !bytes.Equal(got, payload) {
			fail("%s: the response's payload does not read back", name)
		}
	}
	return response{Name: name, QueryWire: hex.EncodeToString(queryWire), Packets: hexes(packets), Rcode: rcode, AA: aa,
		Wire: hex.EncodeToString(wire), Payload: hex.EncodeToString(payload)}
}

func checkDNSAgainstNotes(doc *document) {
	for _, c := range doc.Capacities {
		want := map[string]int{"t.example.com": 134, "t.ruhnama.net": 134, "t2.bypasscensorship.org": 128, "t.co": 140}[c.Domain]
		if want != 0 && c.ClientKCPMTU != want {
			fail("client MTU of %s is %d, the notes say %d", c.Domain, c.ClientKCPMTU, want)
		}
	}
	for _, m := range doc.ServerMTU {
		want := map[int]int{512: 217, 1232: 934, 1452: 1153, 4096: 3787}[m.MTU]
		if m.MaxTXTPayload != want {
			fail("-mtu %d gives a TXT payload of %d, the notes' §6.4 says %d", m.MTU, m.MaxTXTPayload, want)
		}
	}
	byName := map[string]query{}
	for _, q := range doc.Queries {
		byName[q.Name] = q
	}
	if q := byName["notes-7.2-vector-1"]; q.Wire != hex.EncodeToString(unhex(notesVector1)) || q.QName != notesVector1Name {
		fail("vector 1 differs from the notes: %s", q.Wire)
	}
	if q := byName["notes-7.2-vector-2-poll"]; q.Wire != hex.EncodeToString(unhex(notesVector2)) || q.QName != notesVector2Name {
		fail("vector 2 differs from the notes: %s", q.Wire)
	}
	if q := byName["full-data-query-t.example.com"]; q.NameOctets != 255 || q.WireLength != 282 {
		fail("a full data query has a %d-octet name and %d bytes, the notes say 255 and 282", q.NameOctets, q.WireLength)
	}
	if r := doc.Responses[0]; r.Wire != hex.EncodeToString(unhex(notesVector3)) {
		fail("vector 3 differs from the notes: %s", r.Wire)
	}
	if doc.KCPInQuery.QName != notesKCPQueryName {
		fail("the KCP-in-query name differs from the notes: %s", doc.KCPInQuery.QName)
	}
}

func makeNoise() noiseVectors {
	static, err := noise.DH25519.GenerateKeypair(bytes.NewReader(sequence(0x01, 32)))
	must(err)
	clientEphemeral, serverEphemeral := sequence(0x21, 32), sequence(0x41, 32)
	v := noiseVectors{Prologue: dnsttbed.Prologue, PrologueHex: hex.EncodeToString([]byte(dnsttbed.Prologue)),
		ServerStaticPrivate: hex.EncodeToString(static.Private), ServerStaticPublic: hex.EncodeToString(static.Public),
		ClientEphemeralPrivate: hex.EncodeToString(clientEphemeral), ServerEphemeralPrivate: hex.EncodeToString(serverEphemeral)}
	// Run the bed's own handshake functions (the ones the server and client double use) over an
	// in-memory pipe, recording the bytes each side writes.
	clientSide, serverSide := net.Pipe()
	var clientWrote, serverWrote bytes.Buffer
	type result struct {
		conn *dnsttbed.NoiseConn
		err  error
	}
	serverDone := make(chan result, 1)
	go func() {
		c, err := dnsttbed.ServerHandshake(recorder{serverSide, &serverWrote}, static, bytes.NewReader(serverEphemeral))
		serverDone <- result{c, err}
	}()
	client, err := dnsttbed.ClientHandshake(recorder{clientSide, &clientWrote}, static.Public, bytes.NewReader(clientEphemeral))
	must(err)
	server := <-serverDone
	must(server.err)
	msg1, msg2 := clientWrote.Bytes(), serverWrote.Bytes()
	if len(msg1) != 50 || len(msg2) != 50 || msg1[0] != 0 || msg1[1] != 48 || msg2[0] != 0 || msg2[1] != 48 {
		fail("handshake messages are not [00 30] + 48 bytes")
	}
	v.Message1, v.Message2 = hex.EncodeToString(msg1[2:]), hex.EncodeToString(msg2[2:])
	v.HandshakeHash = handshakeHash(static, clientEphemeral, serverEphemeral)

	// Transport messages: the notes' smux SYN and PSH "hello" on stream 3, then an UPD.
	toServer := [][]byte{unhex("0200000003000000"), unhex("020205000300000068656c6c6f"),
		unhex("02040800030000000000000000001000")}
	toClient := [][]byte{unhex("02040800030000000000000000001000"), unhex("020205000300000077656c636f6d65")}
	stream := append([]byte(nil), msg1...)
	v.ClientToServer = exchange(client, server.conn, clientSide, serverSide, toServer, &stream)
	v.ServerToClient = exchange(server.conn, client, serverSide, clientSide, toClient, nil)
	v.Stream = hex.EncodeToString(stream)

	// One 5000-byte write from the server: two frames, 4096 and 904 plaintext bytes.
	big := pattern(3, 5000)
	frames := make(chan []byte, 4)
	go func() {
		for i := 0; i < 2; i++ {
			f, err := dnsttbed.ReadNoiseFrame(clientSide)
			must(err)
			frames <- f
		}
	}()
	_, err = server.conn.Write(big)
	must(err)
	v.ChunkedWrite.PlaintextLength = len(big)
	for i := 0; i < 2; i++ {
		f := <-frames
		framed := append([]byte{byte(len(f) >> 8), byte(len(f))}, f...)
		v.ChunkedWrite.Frames = append(v.ChunkedWrite.Frames, hex.EncodeToString(framed))
	}
	if len(v.ChunkedWrite.Frames[0]) != 2*(2+4096+16) || len(v.ChunkedWrite.Frames[1]) != 2*(2+904+16) {
		fail("a 5000-byte write was not cut into 4096 + 904")
	}
	v.MatchesNotes = v.Message1 == notesMessage1 && v.Message2 == notesMessage2 && v.HandshakeHash == notesHash &&
		v.ServerStaticPublic == notesPublic && v.ClientToServer[0].Ciphertext == notesCT0 && v.ClientToServer[1].Ciphertext == notesCT1
	if !v.MatchesNotes {
		fmt.Fprintln(os.Stderr, "dnstt-test-vectors: WARNING: flynn/noise differs from the notes' §7.3 values")
	}
	return v
}

// handshakeHash repeats the handshake with flynn directly for ChannelBinding (the bed's functions
// do not expose it); message bytes are compared with the pipe run above by the caller's checks.
func handshakeHash(static noise.DHKey, clientEphemeral, serverEphemeral []byte) string {
	initiator, err := noise.NewHandshakeState(noise.Config{CipherSuite: dnsttbed.Suite, Random: bytes.NewReader(clientEphemeral),
		Pattern: noise.HandshakeNK, Initiator: true, Prologue: []byte(dnsttbed.Prologue), PeerStatic: static.Public})
	must(err)
	responder, err := noise.NewHandshakeState(noise.Config{CipherSuite: dnsttbed.Suite, Random: bytes.NewReader(serverEphemeral),
		Pattern: noise.HandshakeNK, Initiator: false, Prologue: []byte(dnsttbed.Prologue), StaticKeypair: static})
	must(err)
	m1, _, _, err := initiator.WriteMessage(nil, nil)
	must(err)
	_, _, _, err = responder.ReadMessage(nil, m1)
	must(err)
	m2, _, _, err := responder.WriteMessage(nil, nil)
	must(err)
	_, _, _, err = initiator.ReadMessage(nil, m2)
	must(err)
	return hex.EncodeToString(initiator.ChannelBinding())
}

type recorder struct {
	net.Conn
	written *bytes.Buffer
}

func (r recorder) Write(p []byte) (int, error) {
	r.written.Write(p)
	return r.Conn.Write(p)
}

// exchange writes each plaintext on one NoiseConn, reads the frame off the other end's raw pipe,
// and checks that the peer NoiseConn opens it (by feeding it through a fresh reader).
func exchange(from, to *dnsttbed.NoiseConn, fromRaw, toRaw net.Conn, plaintexts [][]byte, stream *[]byte) []transportMessage {
	var out []transportMessage
	for _, p := range plaintexts {
		frameCh := make(chan []byte, 1)
		go func() {
			f, err := dnsttbed.ReadNoiseFrame(toRaw)
			must(err)
			frameCh <- f
		}()
		_, err := from.Write(p)
		must(err)
		f := <-frameCh
		framed := append([]byte{byte(len(f) >> 8), byte(len(f))}, f...)
		// The receiving side opens it: hand the framed bytes to its reader.
		opened := make([]byte, len(p))
		openFrom(to, framed, opened)
		if !bytes.Equal(opened, p) {
			fail("a transport message did not open to its plaintext")
		}
		out = append(out, transportMessage{hex.EncodeToString(p), hex.EncodeToString(f), hex.EncodeToString(framed)})
		if stream != nil {
			*stream = append(*stream, framed...)
		}
	}
	return out
}

// openFrom decrypts framed bytes with a NoiseConn's receiving state by swapping its reader.
func openFrom(c *dnsttbed.NoiseConn, framed []byte, into []byte) {
	saved := c.ReadWriteCloser
	c.ReadWriteCloser = nopCloser{bytes.NewReader(framed)}
	_, err := io.ReadFull(c, into)
	c.ReadWriteCloser = saved
	must(err)
}

type nopCloser struct{ io.Reader }

func (nopCloser) Write(p []byte) (int, error) { return 0, errors.New("read only") }
func (nopCloser) Close() error                { return nil }

// memConn is one end of an in-memory packet carrier that records what it sends.
type memConn struct {
	name   string
	in     chan []byte
	peer   *memConn
	record func(direction string, p []byte)
	closed chan struct{}
	once   sync.Once
}

func (c *memConn) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case b := <-c.in:
		return copy(p, b), dnsttbed.PacketConnAddr(c.peer.name), nil
	case <-c.closed:
		return 0, nil, errors.New("closed")
	}
}

func (c *memConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	b := append([]byte(nil), p...)
	c.record(c.name, b)
	select {
	case c.peer.in <- b:
	default:
	}
	return len(p), nil
}

func (c *memConn) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }
func (c *memConn) LocalAddr() net.Addr              { return dnsttbed.PacketConnAddr(c.name) }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

func decodeSegments(p []byte) []segment {
	var out []segment
	for len(p) >= 24 {
		s := segment{Conv: binary.LittleEndian.Uint32(p), Cmd: p[4], Frg: p[5], Wnd: binary.LittleEndian.Uint16(p[6:]),
			Ts: binary.LittleEndian.Uint32(p[8:]), Sn: binary.LittleEndian.Uint32(p[12:]), Una: binary.LittleEndian.Uint32(p[16:])}
		n := int(binary.LittleEndian.Uint32(p[20:]))
		if 24+n > len(p) {
			fail("a kcp-go packet has a cut segment")
		}
		s.Data = hex.EncodeToString(p[24 : 24+n])
		out = append(out, s)
		p = p[24+n:]
	}
	if len(p) != 0 {
		fail("a kcp-go packet has trailing bytes")
	}
	return out
}

func makeKCP() kcpVectors {
	const conv = 0x04030201
	clientMTU := dnsttbed.ClientMTU([]string{"t", "example", "com"})
	serverMTU := dnsttbed.ServerMaxEncodedPayload(1232) - 2
	v := kcpVectors{Conv: conv, ClientMTU: clientMTU, ServerMTU: serverMTU, Packets: []kcpPacket{}}
	var lock sync.Mutex
	record := func(direction string, p []byte) {
		lock.Lock()
		defer lock.Unlock()
		v.Packets = append(v.Packets, kcpPacket{Direction: direction, Hex: hex.EncodeToString(p), Segments: decodeSegments(p)})
	}
	clientEnd := &memConn{name: "c2s", in: make(chan []byte, 1024), record: record, closed: make(chan struct{})}
	serverEnd := &memConn{name: "s2c", in: make(chan []byte, 1024), record: record, closed: make(chan struct{})}
	clientEnd.peer, serverEnd.peer = serverEnd, clientEnd
	ln, err := kcp.ServeConn(nil, 0, 0, serverEnd)
	must(err)
	client, err := kcp.NewConn3(conv, dnsttbed.PacketConnAddr("s2c"), nil, 0, 0, clientEnd)
	must(err)
	must(dnsttbed.KCPConfigure(client, clientMTU))
	read := func(c *kcp.UDPSession, n int) []byte {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, n)
		_, err := io.ReadFull(c, b)
		must(err)
		return b
	}
	first := append([]byte{0x00, 0x30}, pattern(0x11, 48)...)
	_, err = client.Write(first)
	must(err)
	server, err := ln.AcceptKCP()
	must(err)
	must(dnsttbed.KCPConfigure(server, serverMTU))
	if got := read(server, len(first)); !bytes.Equal(got, first) {
		fail("kcp: the server read other bytes")
	}
	second := append([]byte{0x00, 0x30}, pattern(0x22, 48)...)
	_, err = server.Write(second)
	must(err)
	if got := read(client, len(second)); !bytes.Equal(got, second) {
		fail("kcp: the client read other bytes")
	}
	bulk := pattern(0x33, 3000)
	_, err = server.Write(bulk)
	must(err)
	if got := read(client, len(bulk)); !bytes.Equal(got, bulk) {
		fail("kcp: the client read other bulk bytes")
	}
	up := pattern(0x44, 300)
	_, err = client.Write(up)
	must(err)
	if got := read(server, len(up)); !bytes.Equal(got, up) {
		fail("kcp: the server read other bytes")
	}
	// Let the last ACKs go out (interval 10 ms).
	time.Sleep(300 * time.Millisecond)
	lock.Lock()
	defer lock.Unlock()
	out := v
	out.Packets = append([]kcpPacket(nil), v.Packets...)
	for _, p := range out.Packets {
		for _, s := range p.Segments {
			if s.Conv != conv {
				fail("kcp: a segment of another conversation")
			}
			if s.Cmd == 81 && ((p.Direction == "c2s" && len(s.Data)/2 > clientMTU-24) || (p.Direction == "s2c" && len(s.Data)/2 > serverMTU-24)) {
				fail("kcp: a segment over its MTU")
			}
		}
		if (p.Direction == "c2s" && len(p.Hex)/2 > clientMTU) || (p.Direction == "s2c" && len(p.Hex)/2 > serverMTU) {
			fail("kcp: a %s packet of %d bytes is over its MTU", p.Direction, len(p.Hex)/2)
		}
	}
	return out
}

func main() {
	doc := document{
		Generator: "Tests/Support/dnstt-testbed/vectors (dnstt-test-vectors)",
		Sources: map[string]string{
			"noise": "flynn/noise 1.0.0 (Debian golang-github-flynn-noise-dev 1.0.0-2)",
			"kcp":   "kcp-go 5.6.1 (Debian golang-github-xtaci-kcp-dev 5.6.1-2)",
			"dns":   "the test bed's codec (Tests/Support/dnstt-testbed/dnsttbed), checked against the dnstt notes §7.2; responses packed by miekg/dns 1.1.50",
		},
	}
	for _, domain := range []string{"t.example.com", "t.ruhnama.net", "t2.bypasscensorship.org", "t.co", "t.postern.test"} {
		labels, err := dnsttbed.DomainLabels(domain)
		must(err)
		doc.Capacities = append(doc.Capacities, capacity{domain, dnsttbed.QueryCapacity(labels), dnsttbed.ClientMTU(labels)})
	}
	for _, mtu := range []int{512, 1232, 1452, 4096} {
		payload := dnsttbed.ServerMaxEncodedPayload(mtu)
		doc.ServerMTU = append(doc.ServerMTU, serverMTU{mtu, payload, payload - 2})
	}
	var id1, id2 dnsttbed.ClientID
	copy(id1[:], "CLIENTID")
	copy(id2[:], unhex("0123456789abcdef"))
	doc.Queries = append(doc.Queries,
		makeQuery("notes-7.2-vector-1", id1, unhex("d9a315"), []byte("supercalifragilisticexpialidocious"), 0x1234, "t.example.com"),
		makeQuery("notes-7.2-vector-2-poll", id2, sequence(0, 8), nil, 0xabcd, "t.example.com"),
		makeQuery("full-data-query-t.example.com", id2, unhex("aabbcc"), pattern(5, 134), 0x0001, "t.example.com"),
		makeQuery("full-data-query-t.postern.test", id2, unhex("aabbcc"), pattern(6, 133), 0x0002, "t.postern.test"),
		makeQuery("poll-t.postern.test", id2, pattern(9, 8), nil, 0x0003, "t.postern.test"),
		makeQuery("empty-packet-t.postern.test", id2, unhex("010203"), []byte{}, 0x0004, "t.postern.test"),
	)
	poll := unhex(notesVector2)
	doc.Responses = append(doc.Responses,
		makeResponse("notes-7.2-vector-3", poll, [][]byte{[]byte("hello"), []byte("world")}, dns.RcodeSuccess, true),
		makeResponse("empty", poll, nil, dns.RcodeSuccess, true),
		makeResponse("one-packet-over-255", poll, [][]byte{pattern(1, 300)}, dns.RcodeSuccess, true),
		makeResponse("full-932-byte-packet", poll, [][]byte{pattern(2, 932)}, dns.RcodeSuccess, true),
		makeResponse("nxdomain-aa", poll, nil, dns.RcodeNameError, true),
		makeResponse("formerr", poll, nil, dns.RcodeFormatError, true),
	)
	// A query without OPT: the answer has none either.
	noOPT := unhex(notesVector2)
	noOPT = noOPT[:len(noOPT)-11]
	noOPT[11] = 0
	doc.Responses = append(doc.Responses, makeResponse("query-without-opt", noOPT, [][]byte{[]byte("x")}, dns.RcodeSuccess, true))
	for _, n := range []int{0, 1, 254, 255, 256, 510, 511, 934} {
		p := pattern(byte(n), n)
		doc.TXTPayloads = append(doc.TXTPayloads, txtPayload{fmt.Sprintf("%d-bytes", n), hex.EncodeToString(p), hex.EncodeToString(dnsttbed.EncodeRDataTXT(p))})
		back, err := dnsttbed.DecodeRDataTXT(dnsttbed.EncodeRDataTXT(p))
		must(err)
		if !bytes.Equal(back, p) {
			fail("TXT round trip of %d bytes", n)
		}
	}
	for _, c := range []struct {
		name    string
		payload []byte
	}{
		{"two-packets", unhex("000568656c6c6f0005776f726c64")},
		{"empty-packet", unhex("0000")},
		{"trailing-partial-packet-dropped", unhex("000568656c6c6f000a776f")},
		{"lone-length-byte-dropped", unhex("000568656c6c6f00")},
		{"nothing", []byte{}},
	} {
		doc.SplitPackets = append(doc.SplitPackets, splitCase{c.name, hex.EncodeToString(c.payload), hexes(dnsttbed.SplitPackets(c.payload))})
	}
	doc.Noise = makeNoise()
	doc.KCP = makeKCP()
	// The notes' illustrative segment (§7.2) in a query, then the first real kcp-go packet.
	notesSegment := unhex(notesKCPSegment)
	inQuery := makeQuery("notes-7.2-kcp-in-query", id2, unhex("aabbcc"), notesSegment, 0x0005, "t.example.com")
	doc.KCPInQuery = inQuery
	checkDNSAgainstNotes(&doc)
	firstPacket := unhex(doc.KCP.Packets[0].Hex)
	doc.Queries = append(doc.Queries, makeQuery("kcp-go-first-packet-in-query", id2, unhex("aabbcc"), firstPacket, 0x0006, "t.example.com"))
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	must(encoder.Encode(doc))
}
