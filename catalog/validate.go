package catalog

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on names. Names come from OpenLineage producers and engines (URIs, dotted paths), so any
// printable text is allowed; the limits keep index entries bounded.
const (
	MaxNamespaceBytes = 512
	MaxNameBytes      = 1024
	MaxPrincipalBytes = 256
	MaxRoleBytes      = 64
	MaxSystemBytes    = 128
	MaxExternalBytes  = 1024
	MaxDescription    = 16 << 10
)

// ValidateName checks a (namespace, name) pair; it is the only gate names pass on their way in.
func ValidateName(namespace, name string) error {
	if err := validateNameText("namespace", namespace, MaxNamespaceBytes); err != nil {
		return err
	}
	return validateNameText("name", name, MaxNameBytes)
}

// validateNameText is validateText, plus no invisible characters: a name is read by people and
// compared by machines, and two names that look the same must be the same name.
// The invisible characters are looked for first, so one at an end (U+2028 is also white space)
// is named as what it is.
func validateNameText(field, s string, maxBytes int) error {
	if err := CheckVisible(field, s); err != nil {
		return err
	}
	return validateText(field, s, maxBytes)
}

// CheckVisible refuses characters that change how text looks without showing themselves:
// controls (Cc, which holds U+0085), format characters (Cf: zero-width spaces and joiners
// U+200B-U+200D, direction marks and overrides U+200E-U+200F, U+202A-U+202E and U+2066-U+2069,
// the byte order mark U+FEFF, the soft hyphen U+00AD) and the line and paragraph separators
// U+2028 and U+2029. "orders\u202e" shows as a name it is not; "ord\u200bers" as "orders".
func CheckVisible(field, s string) error {
	for i, r := range s {
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return invalid(field, "%s has the invisible or direction-changing character %U at byte %d; remove it (names may hold printable text only)", field, r, i)
		}
	}
	return nil
}

// validateText refuses empty, oversized, non-UTF-8 text, control characters, and surrounding
// white space (refused rather than trimmed, so "orders " and "orders" never become two assets by
// accident).
func validateText(field, s string, maxBytes int) error {
	switch {
	case s == "":
		return invalid(field, "%s is empty", field)
	case len(s) > maxBytes:
		return invalid(field, "%s is %d bytes long; the limit is %d", field, len(s), maxBytes)
	case !utf8.ValidString(s):
		return invalid(field, "%s is not valid UTF-8", field)
	case strings.TrimSpace(s) != s:
		return invalid(field, "%s %q has leading or trailing white space", field, s)
	}
	for i, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return invalid(field, "%s has a control character %U at byte %d", field, r, i)
		}
	}
	return nil
}

// Kind is what an asset is.
type Kind string

// Asset kinds.
const (
	KindTable     Kind = "table"
	KindView      Kind = "view"
	KindJob       Kind = "job"
	KindTopic     Kind = "topic"
	KindFileSet   Kind = "file_set"
	KindDashboard Kind = "dashboard"
	KindOther     Kind = "other"
)

// Kinds lists every asset kind.
var Kinds = []Kind{KindTable, KindView, KindJob, KindTopic, KindFileSet, KindDashboard, KindOther}

// ParseKind checks s against Kinds.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", invalid("kind", "kind %q is not one of %v", s, Kinds)
}

// Space is the name space an asset's names live in: jobs apart from everything else, since a
// job and a dataset may share a namespace and name.
type Space string

// Name spaces.
const (
	SpaceDataset Space = "dataset"
	SpaceJob     Space = "job"
)

// SpaceOf returns the name space of an asset kind.
func SpaceOf(k Kind) Space {
	if k == KindJob {
		return SpaceJob
	}
	return SpaceDataset
}

// ParseSpace checks s ("" means either).
func ParseSpace(s string) (Space, error) {
	switch Space(s) {
	case "", SpaceDataset, SpaceJob:
		return Space(s), nil
	}
	return "", invalid("space", "space %q is not dataset or job", s)
}

// Status is an asset's lifecycle state.
type Status string

// Asset statuses.
const (
	StatusActive     Status = "active"
	StatusDeprecated Status = "deprecated"
	StatusDeleted    Status = "deleted"
)

// ParseStatus checks s against the statuses.
func ParseStatus(s string) (Status, error) {
	switch Status(s) {
	case StatusActive, StatusDeprecated, StatusDeleted:
		return Status(s), nil
	}
	return "", invalid("status", "status %q is not one of active, deprecated, deleted", s)
}

// OwnerKind says whether an owner is a person or a group.
type OwnerKind string

// Owner kinds.
const (
	OwnerUser  OwnerKind = "user"
	OwnerGroup OwnerKind = "group"
)

func validateOwner(in *OwnerInput) error {
	if err := validateText("principal", in.Principal, MaxPrincipalBytes); err != nil {
		return err
	}
	if in.Kind == "" {
		in.Kind = OwnerUser
	}
	if in.Kind != OwnerUser && in.Kind != OwnerGroup {
		return invalid("kind", "owner kind %q is not one of user, group", in.Kind)
	}
	if in.Role == "" {
		in.Role = "technical"
	}
	if len(in.Role) > MaxRoleBytes {
		return invalid("role", "role is %d bytes long; the limit is %d", len(in.Role), MaxRoleBytes)
	}
	for _, r := range in.Role {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return invalid("role", "role %q may hold only lowercase letters, digits, '_' and '-' (e.g. technical, business, steward)", in.Role)
		}
	}
	return nil
}

func validateExternalID(in ExternalIDInput) error {
	if err := validateText("system", in.System, MaxSystemBytes); err != nil {
		return err
	}
	return validateText("value", in.Value, MaxExternalBytes)
}

func validateDescription(s string) error {
	if len(s) > MaxDescription {
		return invalid("description", "description is %d bytes long; the limit is %d", len(s), MaxDescription)
	}
	if !utf8.ValidString(s) {
		return invalid("description", "description is not valid UTF-8")
	}
	return nil
}

func (k Kind) String() string { return string(k) }

func (s Status) String() string { return string(s) }

// Shorten cuts s to at most n bytes without splitting a UTF-8 sequence: sources (OpenLineage,
// Iceberg) may send column types and docs longer than the limits, which are kept cut rather
// than refused.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
