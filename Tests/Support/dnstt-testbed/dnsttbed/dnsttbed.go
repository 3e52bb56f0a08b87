// Package dnsttbed is the dnstt wire protocol as the test bed's Go programs (server stand-in, client
// double, vector tool) speak it. It is ours, written from the project's protocol notes
// (on upstream dnstt, www.bamsoftware.com/software/dnstt/; summarised in docs/plans/DNSTT.md; cited
// as "notes §n") and not copied from dnstt: Debian 12 ships no dnstt, so the bed cannot run the reference. What is upstream code
// here is underneath: miekg/dns 1.1.50 parses and packs DNS messages, flynn/noise 1.0.0 does the
// Noise handshake and ciphers, kcp-go 5.6.1 and smux 1.5.16 (configured by KCPConfigure and
// SmuxConfig) carry the stream. The vector tool checks these encoders against the notes' §7 vectors,
// which were computed with upstream dnstt's own dns package.
package dnsttbed

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/flynn/noise"
	"github.com/miekg/dns"
	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"
)

// Prologue of dnstt's Noise_NK handshake (notes §0).
const Prologue = "dnstt 2020-04-13"

// NoiseMaxPlaintext is the largest plaintext of one Noise transport message dnstt sends (notes §1).
const NoiseMaxPlaintext = 4096

// Padding lengths of a data query and of an empty poll (notes §2.1).
const (
	DataPadding = 3
	PollPadding = 8
)

// ResponseTTL of the server's TXT answers (notes §3.1).
const ResponseTTL = 60

// Suite is Noise_NK_25519_ChaChaPoly_BLAKE2s.
var Suite = noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s)

var base32Encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// ClientID is the 8 bytes that name a client session in every query (notes §2.1). Its String is hex,
// as in snowflake's turbotunnel.ClientID, so that it can key kcp-go's sessions as a net.Addr.
type ClientID [8]byte

func (id ClientID) Network() string { return "clientid" }
func (id ClientID) String() string  { return hex.EncodeToString(id[:]) }

// NewClientID returns 8 random bytes.
func NewClientID() ClientID {
	var id ClientID
	if _, err := rand.Read(id[:]); err != nil {
		panic(err)
	}
	return id
}

// DomainLabels splits a zone such as "t.postern.test" into its labels, refusing empty ones.
func DomainLabels(domain string) ([]string, error) {
	domain = strings.TrimSuffix(domain, ".")
	if domain == "" {
		return nil, errors.New("empty domain")
	}
	labels := strings.Split(domain, ".")
	total := 1
	for _, label := range labels {
		if label == "" || len(label) > 63 {
			return nil, fmt.Errorf("bad label %q in %q", label, domain)
		}
		total += len(label) + 1
	}
	if total > 255 {
		return nil, fmt.Errorf("domain %q is longer than 255 octets", domain)
	}
	return labels, nil
}

// QueryCapacity is how many payload bytes fit in one query name under the domain: notes §2.2,
// c = 254 − Σ(len+1), then c*63/64 (label separators), then c*5/8 (base32).
func QueryCapacity(labels []string) int {
	c := 254
	for _, label := range labels {
		c -= len(label) + 1
	}
	c = c * 63 / 64
	c = c * 5 / 8
	return c
}

// ClientMTU is the client's KCP MTU for the domain: the capacity less ClientID, the padding prefix,
// three padding bytes and the length prefix (notes §2.2). Below 80 the domain is unusable.
func ClientMTU(labels []string) int { return QueryCapacity(labels) - 8 - 1 - DataPadding - 1 }

// txtRDataLength is the RDATA length of a payload of n bytes as TXT character-strings: 255-byte
// chunks, then a final chunk of 0-255 bytes (notes §3.1).
func txtRDataLength(n int) int {
	strings := 1
	if n > 255 {
		strings = (n-1)/255 + 1
	}
	return n + strings
}

// ServerMaxEncodedPayload is the largest TXT payload whose response fits in mtu bytes for the
// worst-case query (a 255-octet name), found by binary search as the notes' §6.4 describes:
// 12 (header) + 259 (question) + 12 (answer name pointer, type, class, TTL, RDLENGTH) + RDATA +
// 11 (OPT). Checked against §6.4's table by the vector tool.
func ServerMaxEncodedPayload(mtu int) int {
	fits := func(n int) bool { return 12+259+12+txtRDataLength(n)+11 <= mtu }
	low, high := 0, 65535
	if !fits(low) {
		return -1
	}
	for low < high {
		mid := (low + high + 1) / 2
		if fits(mid) {
			low = mid
		} else {
			high = mid - 1
		}
	}
	return low
}

// QueryPayload is the decoded payload of one query: ClientID | 0xE0+n | n padding bytes | [len |
// packet] (notes §2.1). A nil packet makes an empty poll; padding's length is the caller's choice
// (3 for data and 8 for a poll in the reference).
func QueryPayload(id ClientID, padding []byte, packet []byte) []byte {
	var b bytes.Buffer
	b.Write(id[:])
	b.WriteByte(byte(0xe0 + len(padding)))
	b.Write(padding)
	if packet != nil {
		b.WriteByte(byte(len(packet)))
		b.Write(packet)
	}
	return b.Bytes()
}

// QueryName puts a payload under the domain: lower-case base32 without padding in 63-character
// labels (notes §2.2).
func QueryName(payload []byte, domain string) string {
	encoded := strings.ToLower(base32Encoding.EncodeToString(payload))
	var labels []string
	for len(encoded) > 63 {
		labels = append(labels, encoded[:63])
		encoded = encoded[63:]
	}
	if encoded != "" {
		labels = append(labels, encoded)
	}
	labels = append(labels, strings.TrimSuffix(domain, "."))
	return strings.Join(labels, ".")
}

// QueryMessage is a query's wire form (notes §2.3): flags 0x0100, one TXT/IN question, an OPT of
// class 4096, no compression. Packed by hand so that every byte is the notes' and none miekg's.
func QueryMessage(id uint16, name string) ([]byte, error) {
	var b bytes.Buffer
	header := []uint16{id, 0x0100, 1, 0, 0, 1}
	for _, v := range header {
		binary.Write(&b, binary.BigEndian, v)
	}
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 {
			return nil, fmt.Errorf("bad label %q", label)
		}
		b.WriteByte(byte(len(label)))
		b.WriteString(label)
	}
	b.WriteByte(0)
	if b.Len()-12 > 255 {
		return nil, fmt.Errorf("name of %d octets", b.Len()-12)
	}
	binary.Write(&b, binary.BigEndian, []uint16{dns.TypeTXT, dns.ClassINET})
	b.Write([]byte{0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0})
	return b.Bytes(), nil
}

// EncodeRDataTXT writes a payload as TXT character-strings (notes §3.1).
func EncodeRDataTXT(p []byte) []byte {
	var b bytes.Buffer
	for len(p) > 255 {
		b.WriteByte(255)
		b.Write(p[:255])
		p = p[255:]
	}
	b.WriteByte(byte(len(p)))
	b.Write(p)
	return b.Bytes()
}

// DecodeRDataTXT concatenates TXT character-strings.
func DecodeRDataTXT(p []byte) ([]byte, error) {
	var out []byte
	for len(p) > 0 {
		n := int(p[0])
		if 1+n > len(p) {
			return nil, errors.New("TXT character-string runs past RDATA")
		}
		out = append(out, p[1:1+n]...)
		p = p[1+n:]
	}
	return out, nil
}

// PacketsPayload frames downstream packets as [u16 BE length][packet] (notes §3.1).
func PacketsPayload(packets [][]byte) []byte {
	var b bytes.Buffer
	for _, p := range packets {
		binary.Write(&b, binary.BigEndian, uint16(len(p)))
		b.Write(p)
	}
	return b.Bytes()
}

// SplitPackets reads [u16 BE length][packet] until the data ends; a trailing partial packet is
// dropped (notes §3.2).
func SplitPackets(p []byte) [][]byte {
	var out [][]byte
	for len(p) >= 2 {
		n := int(binary.BigEndian.Uint16(p))
		if 2+n > len(p) {
			break
		}
		out = append(out, p[2:2+n])
		p = p[2+n:]
	}
	return out
}

// SplitUnderDomain returns the labels of name in front of the domain, matching case-insensitively
// (notes §8.1), or ok false when name is not under it.
func SplitUnderDomain(name string, domain []string) (prefix []string, ok bool) {
	labels := dns.SplitDomainName(name)
	if len(labels) < len(domain) {
		return nil, false
	}
	tail := labels[len(labels)-len(domain):]
	for i := range domain {
		if !strings.EqualFold(tail[i], domain[i]) {
			return nil, false
		}
	}
	return labels[:len(labels)-len(domain)], true
}

// DecodePrefix base32-decodes a name's prefix labels, upper-cased first (0x20 case randomisation,
// notes §6.5 trap 5).
func DecodePrefix(prefix []string) ([]byte, error) {
	return base32Encoding.DecodeString(strings.ToUpper(strings.Join(prefix, "")))
}

// ParseQueryPayload reads ClientID and packets from a decoded query payload (the server's side of
// notes §2.1: any number of padding and packet items; a cut item ends the list).
func ParseQueryPayload(p []byte) (ClientID, [][]byte, bool) {
	var id ClientID
	if len(p) < 8 {
		return id, nil, false
	}
	copy(id[:], p)
	p = p[8:]
	var packets [][]byte
	for len(p) > 0 {
		prefix := int(p[0])
		p = p[1:]
		if prefix >= 0xe0 {
			n := prefix - 0xe0
			if n > len(p) {
				break
			}
			p = p[n:]
			continue
		}
		if prefix > len(p) {
			break
		}
		packets = append(packets, append([]byte(nil), p[:prefix]...))
		p = p[prefix:]
	}
	return id, packets, true
}

// ResponsePayload checks a response as the reference client does (notes §3.2: QR, RCODE 0, exactly
// one answer, under the domain, type TXT; nothing else) and returns its TXT payload.
func ResponsePayload(wire []byte, domain []string) ([]byte, error) {
	var msg dns.Msg
	if err := msg.Unpack(wire); err != nil {
		return nil, err
	}
	if !msg.Response {
		return nil, errors.New("not a response")
	}
	if msg.Rcode != dns.RcodeSuccess {
		return nil, fmt.Errorf("rcode %s", dns.RcodeToString[msg.Rcode])
	}
	if len(msg.Answer) != 1 {
		return nil, fmt.Errorf("%d answers", len(msg.Answer))
	}
	answer := msg.Answer[0]
	if _, ok := SplitUnderDomain(answer.Header().Name, domain); !ok {
		return nil, fmt.Errorf("answer %q not under the domain", answer.Header().Name)
	}
	if answer.Header().Rrtype != dns.TypeTXT {
		return nil, fmt.Errorf("answer of type %d", answer.Header().Rrtype)
	}
	// miekg unpacks TXT into escaped text (\DDD) and packs it back by interpreting the escapes
	// (notes §6.5 trap 1), so packing the record again yields the raw RDATA.
	buf := make([]byte, 65535)
	end, err := dns.PackRR(answer, buf, 0, nil, false)
	if err != nil {
		return nil, err
	}
	rdlength := int(answer.Header().Rdlength)
	return DecodeRDataTXT(buf[end-rdlength : end])
}

// Response builds the server's answer to a query (notes §3.1 and §6.1): the query's ID, QR and
// (when aa) AA, RD not copied, the question copied as sent, for RCODE success one TXT answer whose
// name is compressed to the question's, and an OPT (class 4096) when the query had one. rcode 16
// (BADVERS) goes into the OPT's extended RCODE, as miekg packs it. miekg traps handled (notes §6.5):
// the TXT record is an RFC 3597 record of raw RDATA, compression is on, SetReply is not used.
func Response(query *dns.Msg, rcode int, aa bool, withOPT bool, payload []byte) ([]byte, error) {
	resp := new(dns.Msg)
	resp.Id = query.Id
	resp.Response = true
	resp.Authoritative = aa
	resp.Rcode = rcode
	resp.Compress = true
	resp.Question = query.Question
	if rcode == dns.RcodeSuccess && len(query.Question) == 1 {
		q := query.Question[0]
		resp.Answer = []dns.RR{&dns.RFC3597{
			Hdr:   dns.RR_Header{Name: q.Name, Rrtype: dns.TypeTXT, Class: q.Qclass, Ttl: ResponseTTL},
			Rdata: hex.EncodeToString(EncodeRDataTXT(payload)),
		}}
	}
	if withOPT {
		opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT, Class: 4096}}
		resp.Extra = []dns.RR{opt}
	}
	return resp.Pack()
}

// WriteNoiseFrame writes [u16 BE length][message] in one write (notes §1).
func WriteNoiseFrame(w io.Writer, message []byte) error {
	if len(message) > 65535 {
		return errors.New("Noise message too long")
	}
	b := make([]byte, 2+len(message))
	binary.BigEndian.PutUint16(b, uint16(len(message)))
	copy(b[2:], message)
	_, err := w.Write(b)
	return err
}

// ReadNoiseFrame reads one [u16 BE length][message].
func ReadNoiseFrame(r io.Reader) ([]byte, error) {
	var length [2]byte
	if _, err := io.ReadFull(r, length[:]); err != nil {
		return nil, err
	}
	message := make([]byte, binary.BigEndian.Uint16(length[:]))
	if _, err := io.ReadFull(r, message); err != nil {
		return nil, err
	}
	return message, nil
}

// NoiseConn is the Noise transport phase on a byte stream: writes become ≤ 4096-byte plaintext
// chunks, each sealed and framed; reads open one frame at a time.
type NoiseConn struct {
	io.ReadWriteCloser
	send, recv *noise.CipherState
	writeLock  sync.Mutex
	pending    []byte
}

func (c *NoiseConn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		frame, err := ReadNoiseFrame(c.ReadWriteCloser)
		if err != nil {
			return 0, err
		}
		c.pending, err = c.recv.Decrypt(nil, nil, frame)
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *NoiseConn) Write(p []byte) (int, error) {
	c.writeLock.Lock()
	defer c.writeLock.Unlock()
	written := 0
	for len(p) > 0 {
		chunk := p
		if len(chunk) > NoiseMaxPlaintext {
			chunk = chunk[:NoiseMaxPlaintext]
		}
		sealed, err := c.send.Encrypt(nil, nil, chunk)
		if err != nil {
			return written, err
		}
		if err := WriteNoiseFrame(c.ReadWriteCloser, sealed); err != nil {
			return written, err
		}
		written += len(chunk)
		p = p[len(chunk):]
	}
	return written, nil
}

// ServerHandshake is the responder's side: read msg1 (empty payload required), write msg2 (empty
// payload). random supplies the ephemeral key (nil: crypto/rand).
func ServerHandshake(rwc io.ReadWriteCloser, static noise.DHKey, random io.Reader) (*NoiseConn, error) {
	hs, err := noise.NewHandshakeState(noise.Config{CipherSuite: Suite, Random: random, Pattern: noise.HandshakeNK,
		Initiator: false, Prologue: []byte(Prologue), StaticKeypair: static})
	if err != nil {
		return nil, err
	}
	msg1, err := ReadNoiseFrame(rwc)
	if err != nil {
		return nil, err
	}
	payload, _, _, err := hs.ReadMessage(nil, msg1)
	if err != nil {
		return nil, err
	}
	if len(payload) != 0 {
		return nil, errors.New("non-empty payload in Noise message 1")
	}
	msg2, toInitiator, toResponder, err := hs.WriteMessage(nil, nil)
	if err != nil {
		return nil, err
	}
	if err := WriteNoiseFrame(rwc, msg2); err != nil {
		return nil, err
	}
	// flynn's Split order: the first CipherState is the initiator's sending direction.
	return &NoiseConn{ReadWriteCloser: rwc, send: toResponder, recv: toInitiator}, nil
}

// ClientHandshake is the initiator's side.
func ClientHandshake(rwc io.ReadWriteCloser, serverPublic []byte, random io.Reader) (*NoiseConn, error) {
	hs, err := noise.NewHandshakeState(noise.Config{CipherSuite: Suite, Random: random, Pattern: noise.HandshakeNK,
		Initiator: true, Prologue: []byte(Prologue), PeerStatic: serverPublic})
	if err != nil {
		return nil, err
	}
	msg1, _, _, err := hs.WriteMessage(nil, nil)
	if err != nil {
		return nil, err
	}
	if err := WriteNoiseFrame(rwc, msg1); err != nil {
		return nil, err
	}
	msg2, err := ReadNoiseFrame(rwc)
	if err != nil {
		return nil, err
	}
	payload, send, recv, err := hs.ReadMessage(nil, msg2)
	if err != nil {
		return nil, err
	}
	if len(payload) != 0 {
		return nil, errors.New("non-empty payload in Noise message 2")
	}
	return &NoiseConn{ReadWriteCloser: rwc, send: send, recv: recv}, nil
}

// KCPConfigure applies dnstt's KCP settings (notes §1) to a session.
func KCPConfigure(conn *kcp.UDPSession, mtu int) error {
	conn.SetStreamMode(true)
	conn.SetWindowSize(64, 64)
	conn.SetNoDelay(0, 0, 0, 1)
	if !conn.SetMtu(mtu) {
		return fmt.Errorf("kcp-go refused MTU %d", mtu)
	}
	return nil
}

// SmuxConfig is dnstt's smux configuration (notes §1).
func SmuxConfig() *smux.Config {
	config := smux.DefaultConfig()
	config.Version = 2
	config.KeepAliveTimeout = 2 * time.Minute
	config.MaxStreamBuffer = 1 << 20
	return config
}

// ReadKeyFile reads a hex key file (one line, optional newline, at most 100 bytes; notes §1).
func ReadKeyFile(path string) ([]byte, error) {
	raw, err := readSmallFile(path, 100)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSuffix(string(raw), "\n"))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s: not 64 hex digits", path)
	}
	return key, nil
}

// PacketConnAddr is a fixed net.Addr for in-memory packet conns.
type PacketConnAddr string

func (a PacketConnAddr) Network() string { return "dnstt" }
func (a PacketConnAddr) String() string  { return string(a) }

var _ net.Addr = PacketConnAddr("")

func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("%s: longer than %d bytes", path, limit)
	}
	return raw, nil
}
