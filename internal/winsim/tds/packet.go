package tds

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Packet types (MS-TDS 2.2.3.1.1).
const (
	packSQLBatch    byte = 0x01
	packRPC         byte = 0x03
	packReply       byte = 0x04
	packAttention   byte = 0x06
	packBulkLoad    byte = 0x07
	packTransMgrReq byte = 0x0E
	packLogin7      byte = 0x10
	packSSPI        byte = 0x11
	packPrelogin    byte = 0x12
)

// Packet header status bits.
const (
	statusEOM   byte = 0x01
	statusReset byte = 0x08 // RESETCONNECTION
)

const (
	headerSize        = 8
	defaultPacketSize = 4096
	minPacketSize     = 512
	maxPacketSize     = 32767
	// maxMessageSize bounds one client message so a broken client cannot make the
	// simulator allocate without limit.
	maxMessageSize = 16 << 20
)

// message is one client request: the payloads of its packets up to and including the
// one marked end of message.
type message struct {
	typ    byte
	status byte // status of the first packet (holds RESETCONNECTION)
	data   []byte
}

// readMessage reads packets until one has the EOM bit.
func readMessage(r io.Reader) (message, error) {
	var m message
	var hdr [headerSize]byte
	first := true
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if !first && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return m, err
		}
		typ, status := hdr[0], hdr[1]
		length := int(binary.BigEndian.Uint16(hdr[2:4]))
		if length < headerSize {
			return m, fmt.Errorf("TDS packet header announces length %d, shorter than the header itself", length)
		}
		if first {
			m.typ, m.status = typ, status
			first = false
		} else if typ != m.typ {
			return m, fmt.Errorf("TDS packet of type 0x%02X arrived inside a message of type 0x%02X", typ, m.typ)
		}
		if len(m.data)+length-headerSize > maxMessageSize {
			return m, fmt.Errorf("TDS message of type 0x%02X is larger than %d bytes", m.typ, maxMessageSize)
		}
		start := len(m.data)
		m.data = append(m.data, make([]byte, length-headerSize)...)
		if _, err := io.ReadFull(r, m.data[start:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return m, err
		}
		if status&statusEOM != 0 {
			return m, nil
		}
	}
}

// packetWriter splits messages into packets of the negotiated size.
type packetWriter struct {
	w          io.Writer
	packetSize int
	packetID   byte
}

// writeMessage sends data as one message of the given type, in as many packets as the
// packet size needs. The packets are written with a single Write so a message is not
// interleaved with anything else.
func (pw *packetWriter) writeMessage(typ byte, data []byte) error {
	chunk := pw.packetSize - headerSize
	out := make([]byte, 0, len(data)+headerSize*(len(data)/chunk+1))
	for {
		n := len(data)
		if n > chunk {
			n = chunk
		}
		status := byte(0)
		if n == len(data) {
			status = statusEOM
		}
		pw.packetID++
		out = append(out, typ, status, 0, 0, 0, 0, pw.packetID, 0)
		binary.BigEndian.PutUint16(out[len(out)-6:], uint16(n+headerSize))
		out = append(out, data[:n]...)
		data = data[n:]
		if status == statusEOM {
			break
		}
	}
	_, err := pw.w.Write(out)
	return err
}
