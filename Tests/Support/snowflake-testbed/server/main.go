// Test-bed snowflake server: the WebSocket relay that snowflake proxies connect to.
//
// It does what snowflake's server/lib does, built from Debian's golang-snowflake-dev (common/*),
// kcp-go and smux, so that the Turbo Tunnel / KCP / smux peer a client talks to is upstream code:
//
//   - accept a WebSocket (any path; the proxy appends ?client_ip=...),
//   - require the 8-byte Turbo Tunnel token, then read the 8-byte ClientID,
//   - feed encapsulated packets into one QueuePacketConn shared by all WebSockets, tagged with the
//     ClientID, and write the ClientID's outgoing packets back on whichever WebSocket is current,
//   - run kcp-go's listener on that packet conn with the client's settings (stream mode, window
//     65535, nodelay 0/0/0/1), smux v2 on each KCP session (MaxStreamBuffer 1 MiB, keepalive
//     timeout 4 min as upstream),
//   - forward each smux stream to a plain tor ORPort (-orport), copying both ways.
//
// Not upstream: no ExtORPort (the test bed forwards to a bridge's ORPort directly), no TLS, no
// metrics. Built offline; see build.sh.
//
// With -hostile it is also the test bed's server-side injector (issue #12): the first path segment
// of the WebSocket URL (the relay URL the broker hands the proxy) names an attack on the client,
// on top of serving the session as usual:
//
//	forged-ack           an ACK whose timestamp is 2e9 ms before the client's, for each of the
//	                     client's first 50 packets (trapped Postern's RTT arithmetic)
//	out-of-window-flood  20000 PUSH segments (28 MB) with sequence numbers outside the client's
//	                     window, then the real session
//	smux-unknown-stream  frames for streams the client never opened (PSH, FIN, UPD), 1 MB
//	smux-bad-version     a frame of smux version 9 before the first real one (ends the session)
//	smux-window-flood    64 MiB of stream data, ignoring the 1 MiB window the client granted
//	kcp-garbage          on a ClientID's first carrier only, a KCP segment with an unknown command
//	                     (the client drops that carrier and must carry on over another proxy)
//
// Each is logged as "hostile MODE for ClientID ...".
package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/encapsulation"
	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/turbotunnel"
	"git.torproject.org/pluggable-transports/snowflake.git/v2/common/websocketconn"
	"github.com/gorilla/websocket"
	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"
)

const (
	// Packets for a ClientID without a live WebSocket are kept this long (upstream: 1 min).
	clientMapTimeout = 1 * time.Minute
	kcpWindowSize    = 65535
	streamSize       = 1048576
	// Upstream truncates every incoming packet to this MTU.
	maxPacketSize = 1400
)

// copyingPacketConn works around Debian snowflake 2.5.1: QueuePacketConn.WriteTo keeps the
// caller's slice, but kcp-go 5.6.1 reuses its output buffer after WriteTo returns, so queued
// packets would be overwritten before the WebSocket writer sends them.
type copyingPacketConn struct {
	*turbotunnel.QueuePacketConn
}

func (c copyingPacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	return c.QueuePacketConn.WriteTo(append([]byte(nil), p...), addr)
}

var upgrader = websocket.Upgrader{
	CheckOrigin:     func(*http.Request) bool { return true },
	ReadBufferSize:  2048,
	WriteBufferSize: 2048,
}

type relay struct {
	pconn   *turbotunnel.QueuePacketConn
	orPort  string
	hostile bool
	// ClientID (as text) -> attack, for the smux-level attacks that act in serveSession.
	modes sync.Map
	// ClientIDs that have had a carrier already (kcp-garbage attacks only the first).
	seen sync.Map
}

// kcpSegment builds one KCP segment (little-endian header, as kcp-go).
func kcpSegment(conv uint32, cmd byte, wnd uint16, ts, sn, una uint32, data []byte) []byte {
	b := make([]byte, 24+len(data))
	binary.LittleEndian.PutUint32(b[0:], conv)
	b[4] = cmd
	binary.LittleEndian.PutUint16(b[6:], wnd)
	binary.LittleEndian.PutUint32(b[8:], ts)
	binary.LittleEndian.PutUint32(b[12:], sn)
	binary.LittleEndian.PutUint32(b[16:], una)
	binary.LittleEndian.PutUint32(b[20:], uint32(len(data)))
	copy(b[24:], data)
	return b
}

// smuxFrame builds one smux v2 frame with any version byte.
func smuxFrame(version, cmd byte, sid uint32, data []byte) []byte {
	b := make([]byte, 8+len(data))
	b[0], b[1] = version, cmd
	binary.LittleEndian.PutUint16(b[2:], uint16(len(data)))
	binary.LittleEndian.PutUint32(b[4:], sid)
	copy(b[8:], data)
	return b
}

// injectingConn writes the smux-level attack of its mode before smux's first real write.
type injectingConn struct {
	*kcp.UDPSession
	mode string
	once sync.Once
}

// smux writes through WriteBuffers when the conn has it (kcp-go's does), else Write: both inject.
func (c *injectingConn) WriteBuffers(v [][]byte) (int, error) {
	c.inject()
	return c.UDPSession.WriteBuffers(v)
}

func (c *injectingConn) Write(p []byte) (int, error) {
	c.inject()
	return c.UDPSession.Write(p)
}

func (c *injectingConn) inject() {
	c.once.Do(func() {
		switch c.mode {
		case "smux-unknown-stream":
			for i := 0; i < 300; i++ {
				c.UDPSession.Write(smuxFrame(2, 2, 7+2*uint32(i%50), make([]byte, 3000)))
				c.UDPSession.Write(smuxFrame(2, 4, 0xfffffff1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}))
				c.UDPSession.Write(smuxFrame(2, 1, 0, nil))
			}
		case "smux-bad-version":
			c.UDPSession.Write(smuxFrame(9, 2, 3, []byte("not smux v2")))
		case "smux-window-flood":
			for i := 0; i < 2048; i++ {
				c.UDPSession.Write(smuxFrame(2, 2, 3, make([]byte, 32768)))
			}
		}
	})
}

func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	ws, err := upgrader.Upgrade(w, req, nil)
	if err != nil {
		log.Printf("upgrade: %v", err)
		return
	}
	conn := websocketconn.New(ws)
	defer conn.Close()

	var token [8]byte
	if _, err := io.ReadFull(conn, token[:]); err != nil {
		log.Printf("reading token: %v", err)
		return
	}
	if !bytes.Equal(token[:], turbotunnel.Token[:]) {
		log.Printf("connection without the Turbo Tunnel token; closing")
		return
	}
	var clientID turbotunnel.ClientID
	if _, err := io.ReadFull(conn, clientID[:]); err != nil {
		log.Printf("reading ClientID: %v", err)
		return
	}
	log.Printf("websocket carrier for ClientID %s", clientID)
	mode := ""
	if r.hostile {
		mode = strings.Split(strings.Trim(req.URL.Path, "/"), "/")[0]
		r.modes.Store(clientID.String(), mode)
		if _, again := r.seen.LoadOrStore(clientID.String(), true); again && mode == "kcp-garbage" {
			mode = "" // a later carrier of the same session is served honestly
		}
		log.Printf("hostile %s for ClientID %s", mode, clientID)
	}
	inject := make(chan []byte, 64)

	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(done)
		packets := 0
		for {
			p, err := encapsulation.ReadData(conn)
			if err != nil {
				if err != io.EOF {
					log.Printf("ClientID %s read: %v", clientID, err)
				}
				return
			}
			if len(p) > maxPacketSize {
				p = p[:maxPacketSize]
			}
			packets++
			if len(p) >= 24 {
				conv := binary.LittleEndian.Uint32(p[0:])
				ts := binary.LittleEndian.Uint32(p[8:])
				switch {
				case mode == "forged-ack" && packets <= 50:
					select {
					case inject <- kcpSegment(conv, 82, 65535, ts-2000000000, 0, 0, nil):
					default:
					}
				case mode == "kcp-garbage" && packets == 1:
					inject <- kcpSegment(conv, 99, 65535, ts, 0, 0, nil)
				case mode == "out-of-window-flood" && packets == 1:
					go func() {
						junk := make([]byte, 1376)
						for i := uint32(0); i < 20000; i++ {
							select {
							case inject <- kcpSegment(conv, 81, 65535, ts, 0x80000000+i*7919, 0, junk):
							case <-done:
								return
							}
						}
					}()
				}
			}
			r.pconn.QueueIncoming(p, clientID)
		}
	}()
	go func() {
		defer wg.Done()
		defer conn.Close()
		bw := bufio.NewWriterSize(conn, 32*1024)
		queue := r.pconn.OutgoingQueue(clientID)
		for {
			select {
			case <-done:
				return
			case p := <-inject:
				if _, err := encapsulation.WriteData(bw, p); err != nil {
					return
				}
				if len(queue) == 0 && len(inject) == 0 {
					if err := bw.Flush(); err != nil {
						return
					}
				}
			case p := <-queue:
				if _, err := encapsulation.WriteData(bw, p); err != nil {
					return
				}
				// Flush only when nothing else is queued, to batch packets into fewer messages.
				if len(queue) == 0 && len(inject) == 0 {
					if err := bw.Flush(); err != nil {
						return
					}
				}
			}
		}
	}()
	wg.Wait()
	log.Printf("websocket carrier for ClientID %s closed", clientID)
}

func (r *relay) acceptSessions(ln *kcp.Listener) {
	for {
		conn, err := ln.AcceptKCP()
		if err != nil {
			log.Printf("kcp accept: %v", err)
			return
		}
		log.Printf("KCP session conv %08x from ClientID %s", conn.GetConv(), conn.RemoteAddr())
		conn.SetStreamMode(true)
		conn.SetWindowSize(kcpWindowSize, kcpWindowSize)
		conn.SetNoDelay(0, 0, 0, 1)
		go r.serveSession(conn)
	}
}

func (r *relay) serveSession(conn *kcp.UDPSession) {
	defer conn.Close()
	config := smux.DefaultConfig()
	config.Version = 2
	config.KeepAliveTimeout = 4 * time.Minute
	config.MaxStreamBuffer = streamSize
	var rwc io.ReadWriteCloser = conn
	if mode, ok := r.modes.Load(conn.RemoteAddr().String()); ok && strings.HasPrefix(mode.(string), "smux-") {
		rwc = &injectingConn{UDPSession: conn, mode: mode.(string)}
	}
	sess, err := smux.Server(rwc, config)
	if err != nil {
		log.Printf("smux server: %v", err)
		return
	}
	defer sess.Close()
	for {
		stream, err := sess.AcceptStream()
		if err != nil {
			log.Printf("smux session of conv %08x ended: %v", conn.GetConv(), err)
			return
		}
		go r.forward(stream)
	}
}

func (r *relay) forward(stream *smux.Stream) {
	defer stream.Close()
	or, err := net.DialTimeout("tcp", r.orPort, 10*time.Second)
	if err != nil {
		log.Printf("dial ORPort %s: %v", r.orPort, err)
		return
	}
	defer or.Close()
	log.Printf("stream %d -> ORPort %s", stream.ID(), r.orPort)
	done := make(chan struct{}, 2)
	go func() { io.Copy(or, stream); or.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(stream, or); done <- struct{}{} }()
	<-done
}

func main() {
	listen := flag.String("listen", "127.0.5.3:8080", "address of the WebSocket listener")
	orPort := flag.String("orport", "", "tor ORPort that every smux stream is forwarded to")
	hostile := flag.Bool("hostile", false, "attack clients as the URL path says (see the top of main.go)")
	flag.Parse()
	if *orPort == "" {
		log.Fatal("-orport is required")
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	pconn := turbotunnel.NewQueuePacketConn(turbotunnel.ClientID{}, clientMapTimeout)
	ln, err := kcp.ServeConn(nil, 0, 0, copyingPacketConn{pconn})
	if err != nil {
		log.Fatalf("kcp.ServeConn: %v", err)
	}
	r := &relay{pconn: pconn, orPort: *orPort, hostile: *hostile}
	go r.acceptSessions(ln)

	tcp, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen %s: %v", *listen, err)
	}
	log.Printf("snowflake test server on ws://%s/, forwarding to ORPort %s", *listen, *orPort)
	server := &http.Server{Handler: r}
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		server.Close()
		ln.Close()
	}()
	if err := server.Serve(tcp); err != nil && err != http.ErrServerClosed {
		log.Fatalf("serve: %v", err)
	}
}
