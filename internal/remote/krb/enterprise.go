package krb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jcmturner/gofork/encoding/asn1"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/crypto"
	"github.com/jcmturner/gokrb5/v8/iana/errorcode"
	"github.com/jcmturner/gokrb5/v8/iana/flags"
	"github.com/jcmturner/gokrb5/v8/iana/keyusage"
	"github.com/jcmturner/gokrb5/v8/iana/nametype"
	"github.com/jcmturner/gokrb5/v8/iana/patype"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/jcmturner/gokrb5/v8/messages"
	"github.com/jcmturner/gokrb5/v8/types"
)

// maxReferrals bounds the client referrals (KDC_ERR_WRONG_REALM) one logon follows.
const maxReferrals = 5

// kdcTimeout bounds one exchange with one KDC.
const kdcTimeout = 10 * time.Second

// canonicalName asks realm's KDC for the account whose user principal name is upn:
// an AS exchange with upn as an enterprise principal (NT-ENTERPRISE) and the
// canonicalize option (RFC 6806 5 and 7), pre-authenticated with the password or
// the keytab's key, following client referrals to other realms. It returns the
// account's canonical name and realm from the KDC's reply (whose encrypted part
// must decrypt with the key, so a KDC that does not know the password cannot name
// an account). gokrb5's own AS exchange cannot do this: it refuses a reply whose
// client name differs from the request's.
func canonicalName(conf *config.Config, upn, realm, password string, kt *keytab.Keytab, now func() time.Time) (user, crealm string, err error) {
	cname := types.PrincipalName{NameType: nametype.KRB_NT_ENTERPRISE, NameString: []string{upn}}
	for range maxReferrals + 1 {
		req, err := messages.NewASReqForTGT(realm, conf, cname)
		if err != nil {
			return "", "", fmt.Errorf("building the AS-REQ: %w", err)
		}
		types.SetFlag(&req.ReqBody.KDCOptions, flags.Canonicalize)
		_, kerr, err := asExchange(conf, realm, &req)
		if err != nil {
			return "", "", err
		}
		if kerr != nil && kerr.ErrorCode == errorcode.KDC_ERR_WRONG_REALM && kerr.CRealm != "" && !strings.EqualFold(kerr.CRealm, realm) {
			realm = strings.ToUpper(kerr.CRealm)
			continue
		}
		if kerr == nil || kerr.ErrorCode != errorcode.KDC_ERR_PREAUTH_REQUIRED {
			if kerr != nil {
				return "", "", fmt.Errorf("AS Exchange Error: %w", *kerr)
			}
			return "", "", fmt.Errorf("AS Exchange Error: the KDC of %s answered without asking for pre-authentication", realm)
		}
		var pas types.PADataSequence
		if err := pas.Unmarshal(kerr.EData); err != nil {
			return "", "", fmt.Errorf("AS Exchange Error: the KDC's pre-authentication data cannot be decoded: %w", err)
		}
		key, kvno, err := preauthKey(pas, cname, realm, password, kt, upn)
		if err != nil {
			return "", "", err
		}
		t := now().UTC()
		ts, err := asn1.Marshal(types.PAEncTSEnc{PATimestamp: t, PAUSec: t.Nanosecond() / 1000})
		if err != nil {
			return "", "", err
		}
		enc, err := crypto.GetEncryptedData(ts, key, keyusage.AS_REQ_PA_ENC_TIMESTAMP, kvno)
		if err != nil {
			return "", "", fmt.Errorf("encrypting the pre-authentication timestamp: %w", err)
		}
		b, err := enc.Marshal()
		if err != nil {
			return "", "", err
		}
		req.PAData = append(req.PAData, types.PAData{PADataType: patype.PA_ENC_TIMESTAMP, PADataValue: b})
		rep, kerr, err := asExchange(conf, realm, &req)
		if err != nil {
			return "", "", err
		}
		if kerr != nil {
			if kerr.ErrorCode == errorcode.KDC_ERR_WRONG_REALM && kerr.CRealm != "" && !strings.EqualFold(kerr.CRealm, realm) {
				realm = strings.ToUpper(kerr.CRealm)
				continue
			}
			return "", "", fmt.Errorf("AS Exchange Error: %w", *kerr)
		}
		if rep.EncPart.EType != key.KeyType {
			return "", "", fmt.Errorf("AS Exchange Error: the KDC answered with encryption type %d, not the pre-authentication's %d", rep.EncPart.EType, key.KeyType)
		}
		plain, err := crypto.DecryptEncPart(rep.EncPart, key, keyusage.AS_REP_ENCPART)
		if err != nil {
			return "", "", fmt.Errorf("AS Exchange Error: KDC_ERR_PREAUTH_FAILED: the KDC's reply does not decrypt with the user's key: %w", err)
		}
		var part messages.EncKDCRepPart
		if err := part.Unmarshal(plain); err != nil {
			return "", "", fmt.Errorf("AS Exchange Error: decoding the reply: %w", err)
		}
		if part.Nonce != req.ReqBody.Nonce {
			return "", "", errors.New("AS Exchange Error: the KDC's reply answers another request (nonce)")
		}
		if len(rep.CName.NameString) == 0 || rep.CRealm == "" {
			return "", "", errors.New("AS Exchange Error: the KDC's reply names no client")
		}
		return strings.Join(rep.CName.NameString, "/"), strings.ToUpper(rep.CRealm), nil
	}
	return "", "", fmt.Errorf("AS Exchange Error: more than %d client referrals (KDC_ERR_WRONG_REALM) for %s", maxReferrals, upn)
}

// preauthKey is the key of the pre-authentication the KDC asked for (ETYPE-INFO2:
// its encryption type and salt): from the password, or the keytab's entry for the
// UPN (kvno 0 when unknown).
func preauthKey(pas types.PADataSequence, cname types.PrincipalName, realm, password string, kt *keytab.Keytab, upn string) (types.EncryptionKey, int, error) {
	var etypes []int32
	for _, pa := range pas {
		if pa.PADataType == patype.PA_ETYPE_INFO2 {
			info, err := pa.GetETypeInfo2()
			if err == nil {
				for _, e := range info {
					etypes = append(etypes, e.EType)
				}
			}
		}
	}
	if len(etypes) == 0 {
		return types.EncryptionKey{}, 0, errors.New("AS Exchange Error: KDC_ERR_ETYPE_NOSUPP: the KDC offers no encryption type (ETYPE-INFO2) for the pre-authentication")
	}
	if password != "" {
		key, _, err := crypto.GetKeyFromPassword(password, cname, realm, etypes[0], pas)
		return key, 0, err
	}
	for _, et := range etypes {
		if e, ok := keytabEntry(kt, upn, et); ok {
			return e.Key, int(e.KVNO), nil
		}
	}
	return types.EncryptionKey{}, 0, fmt.Errorf("the keytab holds no key of %s for the encryption types the KDC offers (%v)", upn, etypes)
}

// upnMatches says whether a keytab principal holds a UPN's keys: the UPN as one
// component (ktutil, samba-tool exportkeytab) in any realm, or the name part in the
// UPN suffix's realm.
func upnMatches(upn string, components []string, realm string) bool {
	if len(components) != 1 {
		return false
	}
	if strings.EqualFold(components[0], upn) {
		return true
	}
	name, suffix, _ := strings.Cut(upn, "@")
	return strings.EqualFold(components[0], name) && strings.EqualFold(realm, suffix)
}

type ktEntry struct {
	Key  types.EncryptionKey
	KVNO uint32
}

// keytabEntry is the newest key of etype the keytab holds for upn; a keytab holding
// the keys of one principal only is taken to hold the UPN's (ktpass writes the
// account's keys under the name it was given).
func keytabEntry(kt *keytab.Keytab, upn string, etype int32) (ktEntry, bool) {
	var best ktEntry
	var t time.Time
	found := false
	for _, e := range kt.Entries {
		if e.Key.KeyType == etype && upnMatches(upn, e.Principal.Components, e.Principal.Realm) && (!found || e.Timestamp.After(t)) {
			best, t, found = ktEntry{e.Key, e.KVNO}, e.Timestamp, true
		}
	}
	if found || len(keytabPrincipals(kt)) != 1 {
		return best, found
	}
	for _, e := range kt.Entries {
		if e.Key.KeyType == etype && (!found || e.Timestamp.After(t)) {
			best, t, found = ktEntry{e.Key, e.KVNO}, e.Timestamp, true
		}
	}
	return best, found
}

func keytabPrincipals(kt *keytab.Keytab) []string {
	var names []string
	for _, e := range kt.Entries {
		n := strings.Join(e.Principal.Components, "/") + "@" + e.Principal.Realm
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// renamedKeytab is a copy of kt in which the UPN's entries (as keytabEntry finds
// them) are the canonical principal's, so gokrb5's logon under the canonical name
// finds them.
func renamedKeytab(kt *keytab.Keytab, upn, user, realm string) *keytab.Keytab {
	out := *kt
	out.Entries = slices.Clone(kt.Entries)
	one := len(keytabPrincipals(kt)) == 1
	for i := range out.Entries {
		e := &out.Entries[i]
		if one || upnMatches(upn, e.Principal.Components, e.Principal.Realm) {
			e.Principal.Components = strings.Split(user, "/")
			e.Principal.NumComponents = int16(len(e.Principal.Components))
			e.Principal.Realm = realm
			e.Principal.NameType = nametype.KRB_NT_PRINCIPAL
		}
	}
	return &out
}

// asExchange sends an AS-REQ to the realm's KDCs (krb5.conf's, or DNS SRV records
// with dns_lookup_kdc) over TCP, one after the other, and returns the AS-REP or the
// KRB-ERROR of the first that answers. An error means none answered; its text
// says so as gokrb5's networking errors do, so classifyKDC calls it unreachable.
func asExchange(conf *config.Config, realm string, req *messages.ASReq) (*messages.ASRep, *messages.KRBError, error) {
	b, err := req.Marshal()
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the AS-REQ: %w", err)
	}
	_, kdcs, err := conf.GetKDCs(realm, true)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", krbNetworking, err)
	}
	order := make([]int, 0, len(kdcs))
	for i := range kdcs {
		order = append(order, i)
	}
	sort.Ints(order)
	var errs []error
	for _, i := range order {
		rb, err := sendTCP(kdcs[i], b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var ke messages.KRBError
		if err := ke.Unmarshal(rb); err == nil {
			return nil, &ke, nil
		}
		var rep messages.ASRep
		if err := rep.Unmarshal(rb); err != nil {
			return nil, nil, fmt.Errorf("AS Exchange Error: the KDC %s answered with neither an AS-REP nor a KRB-ERROR: %w", kdcs[i], err)
		}
		return &rep, nil, nil
	}
	return nil, nil, fmt.Errorf("%s: no KDC of %s answered: %w", krbNetworking, realm, errors.Join(errs...))
}

// sendTCP is one exchange with a KDC over TCP (RFC 4120 7.2.2: each message
// prefixed with its length).
func sendTCP(kdc string, msg []byte) ([]byte, error) {
	c, err := net.DialTimeout("tcp", kdc, kdcTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(kdcTimeout)); err != nil {
		return nil, err
	}
	if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(msg))), msg...)); err != nil {
		return nil, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", kdc, err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > 1<<20 {
		return nil, fmt.Errorf("the answer of %s claims %d bytes", kdc, n)
	}
	rb := make([]byte, n)
	if _, err := io.ReadFull(c, rb); err != nil {
		return nil, fmt.Errorf("reading the answer of %s: %w", kdc, err)
	}
	return rb, nil
}
