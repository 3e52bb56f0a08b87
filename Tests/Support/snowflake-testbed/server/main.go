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
package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
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
	pconn  *turbotunnel.QueuePacketConn
	orPort string
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

	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(done)
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
			case p := <-queue:
				if _, err := encapsulation.WriteData(bw, p); err != nil {
					return
				}
				// Flush only when nothing else is queued, to batch packets into fewer messages.
				if len(queue) == 0 {
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
	sess, err := smux.Server(conn, config)
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
	r := &relay{pconn: pconn, orPort: *orPort}
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
