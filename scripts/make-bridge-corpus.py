# Regenerates the made-up pastes in Tests/BridgeConfigTests/Corpus (case-NN.txt). Seeded, so the
# output is stable; the .expected files are recorded by the golden test (POSTERN_RECORD_GOLDEN=1)
# and then reviewed by hand.
import random, base64, os, json
random.seed(20261129)
def cert(): return base64.b64encode(bytes(random.getrandbits(8) for _ in range(52))).decode().rstrip('=')
def fp(): return ''.join(random.choice('0123456789ABCDEF') for _ in range(40))
def hexs(n): return ''.join(random.choice('0123456789abcdef') for _ in range(n))
builtin = json.load(open(os.path.join(os.path.dirname(__file__), '..', 'Sources/BridgeConfig/Resources/builtin-bridges.json')))['bridges']
def o4(ip, iat=0, f=None, c=None):
    f = f if f is not None else fp(); c = c or cert()
    return f"obfs4 {ip} {f} cert={c} iat-mode={iat}"
C = {}
C[1] = "Bridge " + o4("192.0.2.10:443") + "\n"
C[2] = o4("198.51.100.7:9001", iat=1) + "\n"
C[3] = "Bridge " + o4("[2001:db8::7]:9443", iat=1) + "\n"
C[4] = "Bridge " + o4("192.0.2.11:443", f=fp().lower()) + "\n"
C[5] = "Bridge " + o4("192.0.2.12:8443", f="$" + fp()) + "\n"
C[6] = "Bridge " + o4("192.0.2.13:443", c=cert() + "==") + "\n"
C[7] = f"Bridge obfs4 192.0.2.14:443 {fp()} node-id={hexs(40)} public-key={hexs(64)} iat-mode=0\n"
C[8] = f"obfs4 203.0.113.5:80 cert={cert()} iat-mode=2\n"
C[9] = "# bridges from a friend, 2026-11\n\nBridge " + o4("192.0.2.20:443") + "\n// second one\n" + o4("192.0.2.21:443") + "\n\n   \n# last\nBridge " + o4("[2001:db8:1::2]:443", iat=2) + "\n"
C[10] = ("Bridge " + o4("192.0.2.22:443") + "\r\n" + "Bridge " + o4("192.0.2.23:443") + "\r\n")
C[11] = "\tBridge   obfs4\t192.0.2.24:443    " + fp() + "\t\tcert=" + cert() + "   iat-mode=0   \n"
C[12] = '"' + o4("192.0.2.25:443") + '"\n"Bridge ' + o4("192.0.2.26:443") + '",\n'
C[13] = "'" + o4("192.0.2.27:443") + "'\n\u201c" + o4("192.0.2.28:443") + "\u201d\n"
C[14] = ("UseBridges 1\nClientTransportPlugin obfs4 exec /usr/bin/obfs4proxy\nClientTransportPlugin snowflake exec /usr/bin/snowflake-client\n"
         "SocksPort 9050\nBridge " + o4("192.0.2.29:443") + "\nBridge " + builtin['snowflake'][0] + "\n")
C[15] = json.dumps([o4("192.0.2.30:443"), o4("192.0.2.31:443", iat=1)]) + "\n"
C[16] = json.dumps([o4("192.0.2.32:443"), "Bridge " + o4("[2001:db8::32]:443")], indent=2) + "\n"
C[17] = "['" + o4("192.0.2.33:443") + "', '" + o4("192.0.2.34:443") + "']\n"
C[18] = "BRIDGE " + o4("192.0.2.35:443") + "\nbridge " + o4("192.0.2.36:443") + "\n"
C[19] = f"Bridge 192.0.2.40:9001 {fp()}\n"
f = fp(); C[20] = "Bridge 192.0.2.41:443 " + ' '.join(f[i:i+4] for i in range(0,40,4)) + "\n"
C[21] = "Bridge 192.0.2.42\n"
C[22] = f"[2001:db8::42]:9001 {fp()}\n"
C[23] = ''.join("Bridge " + l + "\n" for l in builtin['snowflake'])
f = fp(); C[24] = f"snowflake 192.0.2.50:80 {f} fingerprint={f} url=https://broker.example.net/ ampcache=https://cdn.example.org/ front=www.example.com\n"
C[25] = f"snowflake 192.0.2.51:80 url=https://broker.example.net/ fronts=a.example.com,b.example.com ice=stun:stun.example.net:3478,turn:turn.example.net:3478,stun:stun2.example.net\n"
C[26] = f"snowflake 192.0.2.52:80 url=https://broker.example.net/ max=3 utls-imitate=hellochrome_auto utls-nosni=true\n"
C[27] = f"snowflake snowflake.example.net:80 url=https://broker.example.net/ fronts=cdn.example.com\n"
C[28] = "Bridge " + builtin['meek-azure'][0] + "\n"
C[29] = f"meek_lite 192.0.2.60:443 {fp()} url=https://meek.example.net/ front=cdn.example.com utls=none\n"
C[30] = f"Bridge webtunnel [2001:db8::a1]:443 {fp()} url=https://example.org/Xq3sT9pLmW ver=0.0.1\n"
C[31] = f"webtunnel tunnel.example.org:443 {fp()} url=https://tunnel.example.org/secret servername=front.example.com utls=hellorandomizedalpn\n"
C[32] = f"Bridge conjure 198.51.100.80:80 {fp()} url=https://registration.example.net registrar=ampcache ampcache=https://cdn.example.org/ fronts=www.example.com transport=prefix\n"
C[33] = f"obfs3 198.51.100.81:443 {fp()}\n"
C[34] = ''.join("Bridge " + l + "\n" for l in builtin['obfs4'])
C[35] = ("Bridge " + o4("192.0.2.70:443") + "\nBridge obfs4 192.0.2.71:443 " + fp() + " cert=" + cert()[:50] + " iat-mode=0\n"
         "Bridge " + o4("192.0.2.72:443") + "\nBridge obfs4 192.0.2.73:99999 " + fp() + " cert=" + cert() + " iat-mode=0\n")
C[36] = o4("192.0.2.74:443") + "   # home server\n" + o4("192.0.2.75:443") + " // office\n"
line = o4("192.0.2.76:443"); C[37] = "Bridge " + line + "\n" + line + "\n"
C[38] = "OBFS4 " + o4("192.0.2.77:443")[6:] + "\nSnowflake 192.0.2.78:80 url=https://broker.example.net/\n"
C[39] = o4("192.0.2.79:443") + " colour=blue\n"
C[40] = f"webtunnel [2001:db8::a2]:443 {fp()} url=https://example.org/path addr=198.51.100.9:443 ver=0.0.2\n"
C[41] = f"snowflake 192.0.2.80:80 url=https://broker.example.net/ fronts= front=www.example.com\n"
C[42] = f"webtunnel [2001:db8::a3]:443 {fp()} url=https://example.org/wt?key=abc=def&x=1 ver=0.0.1\n"
# invalid
C[43] = f"Bridge obfs4 192.0.2.90:443 {fp()} cert={cert()[:60]} iat-mode=0\n"
c = cert(); C[44] = f"Bridge obfs4 192.0.2.91:443 {fp()} cert={c[:30]}*{c[31:]} iat-mode=0\n"
C[45] = f"Bridge obfs4 192.0.2.92:443 {fp()} cert={cert()}\n"
C[46] = f"Bridge obfs4 192.0.2.93:443 {fp()} cert={cert()} iat-mode=3\n"
C[47] = f"Bridge obfs4 192.0.2.94:443 {fp()} iat-mode=0\n"
C[48] = f"Bridge obfs4 192.0.2.95:443 {fp()} cert={cert()} iat-mode=0 iat-mode=1\n"
C[49] = f"Bridge obfs4 192.0.2.96:443 {fp()[:39]} cert={cert()} iat-mode=0\n"
C[50] = f"Bridge obfs4 2001:db8::96:443 {fp()} cert={cert()} iat-mode=0\n"
C[51] = f"Bridge 192.0.2.97:70000 {fp()}\n"
C[52] = f"Bridge obfs4 192.0.2.256:443 {fp()} cert={cert()} iat-mode=0\n"
C[53] = "Bridge obfs4\n"
C[54] = f"Bridge obfs4 bridge.example.net:443 {fp()} cert={cert()} iat-mode=0\n"
C[55] = f"Bridge obfs-4 192.0.2.98:443 {fp()} cert={cert()} iat-mode=0\n"
C[56] = f"Bridge obfs4 192.0.2.99:443 {fp()} {cert()} iat-mode=0\n"
C[57] = f"Bridge obfs4 192.0.2.100:443 {fp()} ={cert()} iat-mode=0\n"
C[58] = f"Bridge 192.0.2.101:443 {fp()} cert={cert()}\n"
C[59] = f"snowflake 192.0.2.102:80 {fp()} fronts=www.example.com ice=stun:stun.example.net:3478\n"
C[60] = f"snowflake 192.0.2.103:80 url=https://broker.example.net/ utls-imitate=hellochrome_999\n"
C[61] = f"snowflake 192.0.2.104:80 {fp()} fingerprint={fp()} url=https://broker.example.net/\n"
C[62] = f"snowflake 192.0.2.105:80 url=https://broker.example.net/ max=many\n"
C[63] = f"meek_lite 192.0.2.106:80 front=www.example.com utls=HelloRandomizedALPN\n"
C[64] = f"meek_lite 192.0.2.107:80 url=ftp://meek.example.net/ front=www.example.com\n"
C[65] = f"webtunnel [2001:db8::a4]:443 {fp()} ver=0.0.1\n"
C[66] = f"snowflake 192.0.2.108:80 url=https://broker.example.net/ ice=" + ','.join(f"stun:stun{i}.example.net:3478" for i in range(20)) + "\n"
c = cert(); C[67] = f"Bridge obfs4 192.0.2.109:443 {fp()} cert={c[:20]}\u043e{c[21:]} iat-mode=0\n"
C[68] = '["' + o4("192.0.2.110:443") + '", "' + o4("192.0.2.111:443") + '\n'
C[69] = "Bridge\n" + o4("192.0.2.112:443") + "\n"
C[70] = "# nothing here yet\n\n// still nothing\n   \n"
C[71] = "snowflake 192.0.2.113:80 url=https://broker.example.net/ sqsqueue=https://sqs.us-east-1.amazonaws.com/123/q sqscreds=abc\n"
C[72] = f"obfs4 192.0.2.114:443 node-id={hexs(38)} public-key={hexs(64)} iat-mode=0\n"
C[73] = f"Bridge 192.0.02.115:443 {fp()}\n"
C[74] = f"Bridge obfs4 [2001:db8:::1]:443 {fp()} cert={cert()} iat-mode=0\n"
C[75] = f"webtunnel [2001:db8::a5]:443 {fp()} url=https://example.org/p utls=hellonetscape_4\n"
C[76] = "Bridge " + o4("192.0.2.116:443") + "\n" + "Bridge obfs4 192.0.2.117:443 " + fp() + " cert=" + cert() + " iat-mode=0 \u2014 from Alice\n"
C[77] = "Bridge\u00a0obfs4\u00a0192.0.2.118:443\u2009" + fp() + "\u00a0cert=" + cert() + " iat-mode=0\n"
C[78] = json.dumps([o4("192.0.2.119:443"), "obfs4 192.0.2.120:443 " + fp() + " cert=" + cert()[:69] + " iat-mode=0", "Bridge " + o4("[2001:db8::78]:443")], indent=1) + "\n"
C[79] = "[\n  \"" + o4("192.0.2.121:443") + "\",\n  obfs4 192.0.2.122:443\n]\n"
out = os.path.join(os.path.dirname(__file__), '..', 'Tests/BridgeConfigTests/Corpus')
for k, v in C.items():
    with open(f"{out}/case-{k:02d}.txt", 'w', newline='') as fh: fh.write(v)
print(len(C))
