// Test-bed dnstt client: OURS, a test double standing in for the reference dnstt-client (which
// Debian 12 does not ship), so that the bed can be checked end to end before Postern's Swift client
// exists. It is not a model for that client: no uTLS, no DoT redial, no Retry-After; it speaks the
// wire format of the project's dnstt notes (see docs/plans/DNSTT.md; "notes §n") through
// the shared codec in ../dnsttbed, with kcp-go, flynn/noise and smux from Debian underneath.
//
//	dnstt-test-client (-udp HOST:PORT | -dot HOST:PORT | -doh URL) [-ca PEM] -pubkey-file PUB -domain ZONE MODE
//
// MODE is one of
//
//	-probe-tls            one session, one stream, a TLS handshake through it with whatever the
//	                      server forwards to (the bed: a tor ORPort); prints one "ok:" line with the
//	                      times and the query counts and exits 0, or exits 1 after -timeout
//	-listen ADDR          forward every TCP connection accepted on ADDR through its own stream of
//	                      one session (as upstream's stand-alone client: one session per process)
//
// Scheduling follows notes §2.4: a KCP packet goes out at once, one per query (3 padding bytes);
// a response with packets earns a poll token (at most 16 held); when idle an empty poll (8 padding
// bytes) goes out on a timer that starts at 500 ms, doubles up to 10 s and restarts at 500 ms on
// any other send. DoH keeps at most 32 requests in flight (notes §4).
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"dnsttbed"

	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"
)

// link carries DNS messages to a resolver and back.
type link interface {
	send(message []byte)
	responses() <-chan []byte
}

type udpLink struct {
	conn *net.UDPConn
	out  chan []byte
}

func dialUDP(addr string) (*udpLink, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return nil, err
	}
	l := &udpLink{conn: conn, out: make(chan []byte, 64)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Temporary() {
					continue
				}
				close(l.out)
				return
			}
			l.out <- append([]byte(nil), buf[:n]...)
		}
	}()
	return l, nil
}

func (l *udpLink) send(message []byte)      { l.conn.Write(message) }
func (l *udpLink) responses() <-chan []byte { return l.out }

type dotLink struct {
	conn *tls.Conn
	lock sync.Mutex
	out  chan []byte
}

func dialDoT(addr string, config *tls.Config) (*dotLink, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", addr, config)
	if err != nil {
		return nil, err
	}
	l := &dotLink{conn: conn, out: make(chan []byte, 64)}
	go func() {
		reader := bufio.NewReader(conn)
		for {
			message, err := dnsttbed.ReadNoiseFrame(reader)
			if err != nil {
				log.Printf("DoT connection ended: %v", err)
				close(l.out)
				return
			}
			l.out <- message
		}
	}()
	return l, nil
}

func (l *dotLink) send(message []byte) {
	l.lock.Lock()
	defer l.lock.Unlock()
	dnsttbed.WriteNoiseFrame(l.conn, message)
}
func (l *dotLink) responses() <-chan []byte { return l.out }

type dohLink struct {
	url    string
	client *http.Client
	slots  chan struct{}
	out    chan []byte
}

func newDoH(url string, config *tls.Config) *dohLink {
	transport := &http.Transport{TLSClientConfig: config, ForceAttemptHTTP2: true, TLSHandshakeTimeout: 20 * time.Second}
	return &dohLink{url: url, client: &http.Client{Transport: transport, Timeout: time.Minute},
		slots: make(chan struct{}, 32), out: make(chan []byte, 64)}
}

func (l *dohLink) send(message []byte) {
	select {
	case l.slots <- struct{}{}:
	default:
		return // 32 in flight: drop, KCP retransmits
	}
	go func() {
		defer func() { <-l.slots }()
		req, err := http.NewRequest(http.MethodPost, l.url, bytes.NewReader(message))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/dns-message")
		req.Header.Set("Accept", "application/dns-message")
		req.Header.Set("User-Agent", "")
		resp, err := l.client.Do(req)
		if err != nil {
			log.Printf("DoH: %v", err)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64000))
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/dns-message" {
			log.Printf("DoH: status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			return
		}
		atomic.AddInt64(&dohH2, boolInt(resp.ProtoMajor == 2))
		l.out <- body
	}()
}
func (l *dohLink) responses() <-chan []byte { return l.out }

var dohH2 int64

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// tunnel is the net.PacketConn kcp-go reads and writes: KCP packets in, KCP packets out, carried
// in DNS messages by sendLoop and recvLoop.
type tunnel struct {
	link      link
	domain    []string
	domainStr string
	id        dnsttbed.ClientID
	incoming  chan []byte
	outgoing  chan []byte
	tokens    chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	queries   int64
	answers   int64
}

var remote = dnsttbed.PacketConnAddr("resolver")

func (t *tunnel) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case packet := <-t.incoming:
		return copy(p, packet), remote, nil
	case <-t.closed:
		return 0, nil, errors.New("tunnel closed")
	}
}

func (t *tunnel) WriteTo(p []byte, _ net.Addr) (int, error) {
	select {
	case t.outgoing <- append([]byte(nil), p...):
	default: // the queue holds 128; KCP retransmits what is dropped
	}
	return len(p), nil
}

func (t *tunnel) Close() error {
	t.closeOnce.Do(func() { close(t.closed) })
	return nil
}
func (t *tunnel) LocalAddr() net.Addr              { return dnsttbed.PacketConnAddr("client") }
func (t *tunnel) SetDeadline(time.Time) error      { return nil }
func (t *tunnel) SetReadDeadline(time.Time) error  { return nil }
func (t *tunnel) SetWriteDeadline(time.Time) error { return nil }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}

func (t *tunnel) sendLoop() {
	const initialDelay, maxDelay = 500 * time.Millisecond, 10 * time.Second
	delay := initialDelay
	timer := time.NewTimer(delay)
	for {
		var p []byte
		timedOut := false
		select {
		case p = <-t.outgoing:
		default:
			select {
			case p = <-t.outgoing:
			case <-t.tokens:
			case <-timer.C:
				timedOut = true
			case <-t.closed:
				return
			}
		}
		if len(p) > 0 {
			select {
			case <-t.tokens: // a data query doubles as a poll
			default:
			}
		}
		if timedOut {
			delay *= 2
			if delay > maxDelay {
				delay = maxDelay
			}
		} else {
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			delay = initialDelay
		}
		timer.Reset(delay)
		var payload []byte
		if len(p) > 0 {
			payload = dnsttbed.QueryPayload(t.id, randomBytes(dnsttbed.DataPadding), p)
		} else {
			payload = dnsttbed.QueryPayload(t.id, randomBytes(dnsttbed.PollPadding), nil)
		}
		id := binary.BigEndian.Uint16(randomBytes(2))
		message, err := dnsttbed.QueryMessage(id, dnsttbed.QueryName(payload, t.domainStr))
		if err != nil {
			log.Printf("query: %v", err)
			continue
		}
		atomic.AddInt64(&t.queries, 1)
		t.link.send(message)
	}
}

func (t *tunnel) recvLoop() {
	for message := range t.link.responses() {
		payload, err := dnsttbed.ResponsePayload(message, t.domain)
		if err != nil {
			continue
		}
		atomic.AddInt64(&t.answers, 1)
		packets := dnsttbed.SplitPackets(payload)
		for _, p := range packets {
			select {
			case t.incoming <- p:
			default:
			}
		}
		if len(packets) > 0 {
			select {
			case t.tokens <- struct{}{}:
			default:
			}
		}
	}
	t.Close()
}

func main() {
	udpAddr := flag.String("udp", "", "UDP resolver HOST:PORT")
	dotAddr := flag.String("dot", "", "DoT resolver HOST:PORT")
	dohURL := flag.String("doh", "", "DoH resolver URL")
	caPath := flag.String("ca", "", "CA certificate (PEM) for -dot and -doh")
	pubPath := flag.String("pubkey-file", "", "the server's public key, 64 hex digits")
	domain := flag.String("domain", "", "the tunnel zone")
	probe := flag.Bool("probe-tls", false, "one TLS handshake through one stream, then exit")
	listen := flag.String("listen", "", "forward TCP connections accepted here")
	timeout := flag.Duration("timeout", 60*time.Second, "deadline of -probe-tls")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	labels, err := dnsttbed.DomainLabels(*domain)
	if err != nil {
		log.Fatalf("-domain: %v", err)
	}
	pubkey, err := dnsttbed.ReadKeyFile(*pubPath)
	if err != nil {
		log.Fatal(err)
	}
	if *probe == (*listen != "") {
		log.Fatal("give exactly one of -probe-tls and -listen")
	}
	config := &tls.Config{}
	if *caPath != "" {
		pem, err := os.ReadFile(*caPath)
		if err != nil {
			log.Fatal(err)
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			log.Fatalf("%s: no certificate", *caPath)
		}
	}
	start := time.Now()
	var l link
	var path string
	switch {
	case *dohURL != "":
		l, path = newDoH(*dohURL, config), "doh"
	case *dotAddr != "":
		l, err = dialDoT(*dotAddr, config)
		path = "dot"
	case *udpAddr != "":
		l, err = dialUDP(*udpAddr)
		path = "udp"
	default:
		log.Fatal("give one of -udp, -dot, -doh")
	}
	if err != nil {
		log.Fatalf("%s: %v", path, err)
	}
	mtu := dnsttbed.ClientMTU(labels)
	if mtu < 80 {
		log.Fatalf("domain %s leaves a KCP MTU of %d, below 80", *domain, mtu)
	}
	t := &tunnel{link: l, domain: labels, domainStr: *domain, id: dnsttbed.NewClientID(),
		incoming: make(chan []byte, 128), outgoing: make(chan []byte, 128), tokens: make(chan struct{}, 16),
		closed: make(chan struct{})}
	go t.sendLoop()
	go t.recvLoop()
	conn, err := kcp.NewConn2(remote, nil, 0, 0, t)
	if err != nil {
		log.Fatal(err)
	}
	if err := dnsttbed.KCPConfigure(conn, mtu); err != nil {
		log.Fatal(err)
	}
	if *probe {
		go func() {
			time.Sleep(*timeout)
			fmt.Printf("FAIL: %s: no TLS handshake through the tunnel after %v (%d queries, %d answers)\n",
				path, *timeout, atomic.LoadInt64(&t.queries), atomic.LoadInt64(&t.answers))
			os.Exit(1)
		}()
	}
	nconn, err := dnsttbed.ClientHandshake(conn, pubkey, nil)
	if err != nil {
		log.Fatalf("Noise handshake: %v", err)
	}
	handshake := time.Since(start)
	sess, err := smux.Client(nconn, dnsttbed.SmuxConfig())
	if err != nil {
		log.Fatal(err)
	}
	if *probe {
		stream, err := sess.OpenStream()
		if err != nil {
			log.Fatal(err)
		}
		tlsConn := tls.Client(stream, &tls.Config{InsecureSkipVerify: true})
		if err := tlsConn.Handshake(); err != nil {
			fmt.Printf("FAIL: %s: TLS handshake through the tunnel: %v\n", path, err)
			os.Exit(1)
		}
		state := tlsConn.ConnectionState()
		extra := ""
		if path == "doh" {
			extra = fmt.Sprintf(", %d answers over h2", atomic.LoadInt64(&dohH2))
		}
		fmt.Printf("ok: %s: Noise handshake in %.1f s, TLS %s handshake with the far end (%s) in %.1f s, %d queries, %d answers%s, client KCP MTU %d\n",
			path, handshake.Seconds(), tlsVersion(state.Version), tls.CipherSuiteName(state.CipherSuite), time.Since(start).Seconds(),
			atomic.LoadInt64(&t.queries), atomic.LoadInt64(&t.answers), extra, mtu)
		os.Exit(0)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("forwarding %s through %s, session ready in %.1f s", *listen, path, handshake.Seconds())
	for {
		local, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			defer local.Close()
			stream, err := sess.OpenStream()
			if err != nil {
				log.Printf("open stream: %v", err)
				return
			}
			defer stream.Close()
			done := make(chan struct{}, 2)
			go func() { io.Copy(stream, local); done <- struct{}{} }()
			go func() { io.Copy(local, stream); done <- struct{}{} }()
			<-done
		}()
	}
}

func tlsVersion(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "1.3"
	case tls.VersionTLS12:
		return "1.2"
	}
	return fmt.Sprintf("0x%04x", v)
}
