// Test-bed dnstt server: OURS, a stand-in for dnstt-server, which Debian 12 does not ship. It is
// written from the project's dnstt protocol notes (on upstream dnstt, www.bamsoftware.com/software/dnstt/;
// summarised in docs/plans/DNSTT.md; "notes §n" below), not copied from dnstt. The layers under the DNS codec are
// upstream code from Debian: kcp-go 5.6.1, smux 1.5.16, flynn/noise 1.0.0, miekg/dns 1.1.50 and
// snowflake's turbotunnel.QueuePacketConn (golang-snowflake-dev 2.5.1).
//
//	dnstt-test-server -gen-key -privkey-file KEY -pubkey-file PUB
//	dnstt-test-server -udp 127.0.8.1:53 -domain t.postern.test -privkey-file KEY -orport 127.0.3.1:5000 \
//	    [-mtu 1232] [-doh ADDR -dot ADDR -tls-cert PEM -tls-key PEM [-doh-path /dns-query] [-doh-http1]]
//
// What it does, as notes §6 describes dnstt-server:
//   - UDP: raw reads, each datagram unpacked with miekg's Msg.Unpack (no dns.Server, whose accept
//     function has opinions of its own), answered in the order of §6.1: no answer to QR=1; FORMERR
//     for more than one OPT; BADVERS for an OPT version other than 0; FORMERR for QDCOUNT ≠ 1;
//     NXDOMAIN without AA for a name outside the domain; then with AA: NOTIMP for OPCODE ≠ 0,
//     NXDOMAIN for a type other than TXT (QNAME minimisation's A/NS probes, the apex), NXDOMAIN for
//     a prefix that is not base32 after upper-casing, FORMERR when the query's EDNS size (none or
//     below 512 counts as 512) is below -mtu (its packets are not used), NXDOMAIN for a payload
//     shorter than a ClientID; otherwise the payload's packets go to the ClientID's KCP session.
//   - One send loop in arrival order (§6.3): a success answer takes the client's one-slot stash,
//     else its outgoing queue, else waits up to 1 s (cut short by the next query); after the first
//     packet only packets ready at once are added while they fit the TXT payload limit computed
//     from -mtu (§6.4: 934 bytes for 1232), the one that does not fit is stashed. A response longer
//     than -mtu is cut and gets TC (UDP). At most 100 answers wait; a query beyond that gets none.
//   - Sessions: QueuePacketConn keyed by ClientID (per-client queues expire after 4 min idle) under
//     kcp.ServeConn (window 64, nodelay 0/0/0/1, stream mode, MTU = payload limit − 2 = 932), a
//     Noise_NK responder with dnstt's prologue and [u16 BE] framing (4096-byte plaintext chunks),
//     smux v2 (keepalive timeout 2 min, stream buffer 1 MiB), each stream dialled to -orport with a
//     30 s timeout and copied both ways.
//   - A stats line (queries, and how many had upper case in the name: 0x20 from a resolver)
//     every 10 s while it changes, and at once on SIGUSR1.
//
// Differences from dnstt-server, all outside the wire format: Debian's QueuePacketConn holds 512
// packets per client where dnstt's holds 128; the optional -doh (HTTPS POST of
// application/dns-message, h2 and HTTP/1.1 from Go's net/http, or HTTP/1.1 only with -doh-http1)
// and -dot ([u16 BE] framed messages over TLS) listeners, which dnstt-server lacks, let tests talk
// to the server without a resolver (notes §10); their answers are never cut.
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"dnsttbed"

	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/turbotunnel"
	"github.com/flynn/noise"
	"github.com/miekg/dns"
	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"
)

const (
	maxResponseDelay  = 1 * time.Second
	idleTimeout       = 2 * time.Minute
	upstreamDialLimit = 30 * time.Second
	handshakeLimit    = 60 * time.Second
	responseSlots     = 100
	dohWait           = 30 * time.Second
)

// copyingPacketConn: Debian's QueuePacketConn.WriteTo keeps the caller's slice, but kcp-go 5.6.1
// reuses its output buffer after WriteTo returns (as in the snowflake stand-in server).
type copyingPacketConn struct {
	*turbotunnel.QueuePacketConn
}

func (c copyingPacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	return c.QueuePacketConn.WriteTo(append([]byte(nil), p...), addr)
}

// record is one query waiting for its answer.
type record struct {
	query   *dns.Msg
	rcode   int
	aa      bool
	withOPT bool
	client  dnsttbed.ClientID
	// Whether this is a success answer that carries the client's downstream packets.
	carries bool
	reply   func([]byte)
	// Answers longer than this are cut and get TC (UDP only; 0: never cut).
	cutAt int
}

type server struct {
	domain     []string
	mtu        int
	maxPayload int
	pconn      *turbotunnel.QueuePacketConn
	records    chan *record
	stash      map[dnsttbed.ClientID][]byte
	static     noise.DHKey
	orPort     string
	// Counts for the stats line: queries, and those whose name had an upper-case letter (a
	// resolver's 0x20 randomisation, notes §8.1).
	queries, mixedCase int64
}

// logStats writes a line every 10 s while the counts change, and at once on SIGUSR1.
func (s *server) logStats() {
	var lastQueries int64
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	tick := time.NewTicker(10 * time.Second)
	for {
		asked := false
		select {
		case <-tick.C:
		case <-usr1:
			asked = true
		}
		queries, mixed := atomic.LoadInt64(&s.queries), atomic.LoadInt64(&s.mixedCase)
		if queries != lastQueries || asked {
			log.Printf("stats: %d queries, %d with upper case in the name", queries, mixed)
			lastQueries = queries
		}
	}
}

// handle decides a query's answer (notes §6.1) and queues it; nil means no answer.
func (s *server) handle(wire []byte, reply func([]byte), cutAt int) {
	query := new(dns.Msg)
	if err := query.Unpack(wire); err != nil {
		return
	}
	if query.Response {
		return
	}
	rec := &record{query: query, rcode: dns.RcodeSuccess, reply: reply, cutAt: cutAt}
	s.decide(rec)
	select {
	case s.records <- rec:
	default:
		// The reference drops the query when its 100 answer slots are full (notes §6.1).
	}
}

func (s *server) decide(rec *record) {
	query := rec.query
	var opts []*dns.OPT
	for _, rr := range query.Extra {
		if opt, ok := rr.(*dns.OPT); ok {
			opts = append(opts, opt)
		}
	}
	payloadSize := 512
	if len(opts) > 1 {
		rec.rcode = dns.RcodeFormatError
		return
	}
	if len(opts) == 1 {
		rec.withOPT = true
		if opts[0].Version() != 0 {
			rec.rcode = dns.RcodeBadVers
			return
		}
		if size := int(opts[0].UDPSize()); size > payloadSize {
			payloadSize = size
		}
	}
	if len(query.Question) != 1 {
		rec.rcode = dns.RcodeFormatError
		return
	}
	question := query.Question[0]
	atomic.AddInt64(&s.queries, 1)
	if strings.ToLower(question.Name) != question.Name {
		atomic.AddInt64(&s.mixedCase, 1)
	}
	prefix, ok := dnsttbed.SplitUnderDomain(question.Name, s.domain)
	if !ok {
		rec.rcode = dns.RcodeNameError
		return
	}
	rec.aa = true
	if query.Opcode != dns.OpcodeQuery {
		rec.rcode = dns.RcodeNotImplemented
		return
	}
	if question.Qtype != dns.TypeTXT {
		rec.rcode = dns.RcodeNameError
		return
	}
	payload, err := dnsttbed.DecodePrefix(prefix)
	if err != nil {
		rec.rcode = dns.RcodeNameError
		return
	}
	if payloadSize < s.mtu {
		rec.rcode = dns.RcodeFormatError
		return
	}
	client, packets, ok := dnsttbed.ParseQueryPayload(payload)
	if !ok {
		rec.rcode = dns.RcodeNameError
		return
	}
	for _, p := range packets {
		s.pconn.QueueIncoming(p, client)
	}
	rec.client = client
	rec.carries = true
}

// sendLoop answers queries in arrival order (notes §6.3).
func (s *server) sendLoop() {
	var next *record
	for {
		rec := next
		next = nil
		if rec == nil {
			rec = <-s.records
		}
		var payload bytes.Buffer
		if rec.carries {
			limit := s.maxPayload
			timer := time.NewTimer(maxResponseDelay)
			queue := s.pconn.OutgoingQueue(rec.client)
			for {
				var p []byte
				if stashed, ok := s.stash[rec.client]; ok {
					p = stashed
					delete(s.stash, rec.client)
				} else {
					select {
					case p = <-queue:
					default:
						select {
						case p = <-queue:
						case <-timer.C:
						case next = <-s.records:
						}
					}
				}
				// After the first packet, only what is ready at once.
				timer.Reset(0)
				if len(p) == 0 {
					break
				}
				limit -= 2 + len(p)
				if payload.Len() > 0 && limit < 0 {
					s.stash[rec.client] = p
					break
				}
				binary.Write(&payload, binary.BigEndian, uint16(len(p)))
				payload.Write(p)
			}
			timer.Stop()
		}
		wire, err := dnsttbed.Response(rec.query, rec.rcode, rec.aa, rec.withOPT, payload.Bytes())
		if err != nil {
			log.Printf("packing a response: %v", err)
			continue
		}
		if rec.cutAt > 0 && len(wire) > rec.cutAt {
			wire = wire[:rec.cutAt]
			wire[2] |= 0x02
		}
		rec.reply(wire)
	}
}

func (s *server) acceptSessions(ln *kcp.Listener) {
	for {
		conn, err := ln.AcceptKCP()
		if err != nil {
			log.Printf("kcp accept: %v", err)
			return
		}
		if err := dnsttbed.KCPConfigure(conn, s.maxPayload-2); err != nil {
			log.Printf("%v", err)
			conn.Close()
			continue
		}
		log.Printf("KCP session conv %08x from ClientID %s", conn.GetConv(), conn.RemoteAddr())
		go s.serveSession(conn)
	}
}

func (s *server) serveSession(conn *kcp.UDPSession) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(handshakeLimit))
	nconn, err := dnsttbed.ServerHandshake(conn, s.static, nil)
	if err != nil {
		log.Printf("ClientID %s: Noise handshake: %v", conn.RemoteAddr(), err)
		return
	}
	conn.SetDeadline(time.Time{})
	log.Printf("ClientID %s: Noise handshake done", conn.RemoteAddr())
	sess, err := smux.Server(nconn, dnsttbed.SmuxConfig())
	if err != nil {
		log.Printf("smux server: %v", err)
		return
	}
	defer sess.Close()
	for {
		stream, err := sess.AcceptStream()
		if err != nil {
			log.Printf("ClientID %s: smux session ended: %v", conn.RemoteAddr(), err)
			return
		}
		go s.forward(stream, conn.RemoteAddr())
	}
}

func (s *server) forward(stream *smux.Stream, client net.Addr) {
	defer stream.Close()
	or, err := net.DialTimeout("tcp", s.orPort, upstreamDialLimit)
	if err != nil {
		log.Printf("ClientID %s stream %d: dial %s: %v", client, stream.ID(), s.orPort, err)
		return
	}
	defer or.Close()
	log.Printf("ClientID %s stream %d -> %s", client, stream.ID(), s.orPort)
	done := make(chan struct{}, 2)
	go func() { io.Copy(or, stream); or.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(stream, or); done <- struct{}{} }()
	<-done
}

func (s *server) serveUDP(conn net.PacketConn) {
	buf := make([]byte, 4096)
	for {
		n, addr, err := conn.ReadFrom(buf)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Temporary() {
				continue
			}
			log.Printf("udp read: %v", err)
			return
		}
		wire := append([]byte(nil), buf[:n]...)
		s.handle(wire, func(resp []byte) { conn.WriteTo(resp, addr) }, s.mtu)
	}
}

// serveDoT reads [u16 BE][message] from one TLS connection and writes answers the same way, in
// whatever order they come.
func (s *server) serveDoT(conn net.Conn) {
	defer conn.Close()
	var lock sync.Mutex
	reader := bufio.NewReader(conn)
	for {
		conn.SetReadDeadline(time.Now().Add(idleTimeout))
		message, err := dnsttbed.ReadNoiseFrame(reader)
		if err != nil {
			return
		}
		s.handle(message, func(resp []byte) {
			lock.Lock()
			defer lock.Unlock()
			conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			dnsttbed.WriteNoiseFrame(conn, resp)
		}, 0)
	}
}

func (s *server) serveDoH(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 65536))
	if err != nil || len(body) > 65535 {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	answer := make(chan []byte, 1)
	s.handle(body, func(resp []byte) { answer <- resp }, 0)
	select {
	case resp := <-answer:
		w.Header().Set("Content-Type", "application/dns-message")
		w.Write(resp)
	case <-time.After(dohWait):
		http.Error(w, "no answer", http.StatusServiceUnavailable)
	case <-req.Context().Done():
	}
}

func generateKey(privPath, pubPath string) {
	key, err := noise.DH25519.GenerateKeypair(nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(privPath, []byte(hex.EncodeToString(key.Private)+"\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(pubPath, []byte(hex.EncodeToString(key.Public)+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pubkey %x\n", key.Public)
}

func main() {
	udpAddr := flag.String("udp", "", "UDP address to answer DNS on (e.g. 127.0.8.1:53)")
	domain := flag.String("domain", "", "the tunnel zone, e.g. t.postern.test")
	privPath := flag.String("privkey-file", "", "server private key, 64 hex digits")
	pubPath := flag.String("pubkey-file", "", "with -gen-key: where the public key goes")
	genKey := flag.Bool("gen-key", false, "write a new key pair to -privkey-file and -pubkey-file and exit")
	mtu := flag.Int("mtu", 1232, "largest UDP response")
	orPort := flag.String("orport", "", "address every smux stream is forwarded to (a tor ORPort)")
	dohAddr := flag.String("doh", "", "also answer DNS over HTTPS on this TCP address")
	dohPath := flag.String("doh-path", "/dns-query", "DoH path")
	dohHTTP1 := flag.Bool("doh-http1", false, "DoH over HTTP/1.1 only (no h2 in ALPN)")
	dotAddr := flag.String("dot", "", "also answer DNS over TLS on this TCP address")
	certPath := flag.String("tls-cert", "", "certificate (PEM) for -doh and -dot")
	keyPath := flag.String("tls-key", "", "key (PEM) for -doh and -dot")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if *genKey {
		if *privPath == "" || *pubPath == "" {
			log.Fatal("-gen-key needs -privkey-file and -pubkey-file")
		}
		generateKey(*privPath, *pubPath)
		return
	}
	labels, err := dnsttbed.DomainLabels(*domain)
	if err != nil {
		log.Fatalf("-domain: %v", err)
	}
	if *orPort == "" || *privPath == "" || (*udpAddr == "" && *dohAddr == "" && *dotAddr == "") {
		log.Fatal("-orport, -privkey-file and at least one of -udp, -doh, -dot are required")
	}
	private, err := dnsttbed.ReadKeyFile(*privPath)
	if err != nil {
		log.Fatal(err)
	}
	static, err := noise.DH25519.GenerateKeypair(bytes.NewReader(private))
	if err != nil {
		log.Fatal(err)
	}
	maxPayload := dnsttbed.ServerMaxEncodedPayload(*mtu)
	if maxPayload-2 < 80 {
		log.Fatalf("-mtu %d leaves a KCP MTU of %d, below 80", *mtu, maxPayload-2)
	}
	s := &server{domain: labels, mtu: *mtu, maxPayload: maxPayload,
		pconn:   turbotunnel.NewQueuePacketConn(dnsttbed.PacketConnAddr("dnstt-server"), idleTimeout*2),
		records: make(chan *record, responseSlots), stash: map[dnsttbed.ClientID][]byte{},
		static: static, orPort: *orPort}
	ln, err := kcp.ServeConn(nil, 0, 0, copyingPacketConn{s.pconn})
	if err != nil {
		log.Fatalf("kcp.ServeConn: %v", err)
	}
	go s.acceptSessions(ln)
	go s.sendLoop()
	go s.logStats()

	var closers []io.Closer
	if *udpAddr != "" {
		conn, err := net.ListenPacket("udp", *udpAddr)
		if err != nil {
			log.Fatalf("listen udp %s: %v", *udpAddr, err)
		}
		closers = append(closers, conn)
		go s.serveUDP(conn)
	}
	if *dohAddr != "" || *dotAddr != "" {
		if *certPath == "" || *keyPath == "" {
			log.Fatal("-doh and -dot need -tls-cert and -tls-key")
		}
		cert, err := tls.LoadX509KeyPair(*certPath, *keyPath)
		if err != nil {
			log.Fatal(err)
		}
		if *dotAddr != "" {
			ln, err := tls.Listen("tcp", *dotAddr, &tls.Config{Certificates: []tls.Certificate{cert}})
			if err != nil {
				log.Fatalf("listen dot %s: %v", *dotAddr, err)
			}
			closers = append(closers, ln)
			go func() {
				for {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					go s.serveDoT(conn)
				}
			}()
		}
		if *dohAddr != "" {
			mux := http.NewServeMux()
			mux.HandleFunc(*dohPath, s.serveDoH)
			config := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
			httpServer := &http.Server{Handler: mux, TLSConfig: config, ReadHeaderTimeout: 20 * time.Second}
			if *dohHTTP1 {
				config.NextProtos = []string{"http/1.1"}
				httpServer.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
			}
			tcp, err := net.Listen("tcp", *dohAddr)
			if err != nil {
				log.Fatalf("listen doh %s: %v", *dohAddr, err)
			}
			closers = append(closers, httpServer)
			go httpServer.ServeTLS(tcp, "", "")
		}
	}
	log.Printf("dnstt test server for %s (UDP %q, DoH %q, DoT %q), -mtu %d (KCP MTU %d), forwarding to %s",
		*domain, *udpAddr, *dohAddr, *dotAddr, *mtu, maxPayload-2, *orPort)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	for _, c := range closers {
		c.Close()
	}
	ln.Close()
}
