package tables

import (
	"time"

	"github.com/google/uuid"
)

// Table is what the catalog knows of one Iceberg table.
type Table struct {
	AssetID           uuid.UUID  `json:"asset_id"`
	Connection        string     `json:"connection,omitempty"` // "" when registered by metadata location
	Warehouse         string     `json:"warehouse,omitempty"`  // the Tidemark warehouse serving it over the Iceberg REST protocol
	Identifier        string     `json:"identifier,omitempty"`
	TableUUID         string     `json:"table_uuid"`
	Location          string     `json:"location"`
	MetadataLocation  string     `json:"metadata_location"`
	FormatVersion     int        `json:"format_version"`
	CurrentSnapshotID *int64     `json:"current_snapshot_id,omitempty"`
	LastUpdatedAt     *time.Time `json:"last_updated_at,omitempty"`
	RefreshedAt       *time.Time `json:"refreshed_at,omitempty"`
	Error             string     `json:"error,omitempty"`
	ErrorAt           *time.Time `json:"error_at,omitempty"`
	GoneAt            *time.Time `json:"gone_at,omitempty"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

// Inspection is the table's metadata as of its last refresh: every retained snapshot and the
// metadata, statistics and partition-statistics files the metadata references.
type Inspection struct {
	MetadataLocation string         `json:"metadata_location"`
	MetadataLog      []MetadataFile `json:"metadata_log"` // previous metadata files, oldest first
	Snapshots        []Snapshot     `json:"snapshots"`    // oldest first
	Statistics       []StatsFile    `json:"statistics,omitempty"`
	PartitionStats   []StatsFile    `json:"partition_statistics,omitempty"`
	Specs            []Spec         `json:"partition_specs"`
	// Properties are the table properties (a table may set its cleanup cadence there).
	Properties map[string]string `json:"properties,omitempty"`
}

// MetadataFile is one entry of the metadata-log.
type MetadataFile struct {
	Path string    `json:"path"`
	At   time.Time `json:"at"`
}

// StatsFile is a statistics or partition-statistics file.
type StatsFile struct {
	SnapshotID int64  `json:"snapshot_id"`
	Path       string `json:"path"`
	Size       int64  `json:"size_bytes"`
}

// Spec is a partition spec: the fields by ID, for rendering partition values.
type Spec struct {
	ID     int         `json:"id"`
	Fields []SpecField `json:"fields"`
}

// SpecField is one partition field.
type SpecField struct {
	FieldID   int    `json:"field_id"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
}

// Snapshot summarises one retained snapshot from its manifest list and manifests.
type Snapshot struct {
	ID              int64             `json:"id"`
	ParentID        *int64            `json:"parent_id,omitempty"`
	SequenceNumber  int64             `json:"sequence_number"`
	At              time.Time         `json:"at"`
	Operation       string            `json:"operation,omitempty"`
	Current         bool              `json:"current"`
	Refs            []string          `json:"refs,omitempty"` // branches and tags whose head it is
	ManifestList    string            `json:"manifest_list"`
	DataManifests   int               `json:"data_manifests"`
	DeleteManifests int               `json:"delete_manifests"`
	DataFiles       int64             `json:"data_files"`
	DeleteFiles     int64             `json:"delete_files"`
	Records         int64             `json:"records"`
	Bytes           int64             `json:"bytes"`
	ManifestEntries int64             `json:"manifest_entries"` // entries a full scan of this snapshot reads
	Summary         map[string]string `json:"summary,omitempty"`
}

// File is one live file a snapshot references, from a manifest entry.
type File struct {
	Path      string         `json:"path"`
	Content   string         `json:"content"` // data, position_deletes, equality_deletes
	Format    string         `json:"format"`
	Size      int64          `json:"size_bytes"`
	Records   int64          `json:"records"`
	SpecID    int32          `json:"spec_id"`
	Partition map[string]any `json:"partition,omitempty"` // partition field name -> value
	Manifest  string         `json:"manifest"`
	Added     int64          `json:"added_snapshot_id"`
}

// RefreshReport says what a refresh read.
type RefreshReport struct {
	AssetID           uuid.UUID `json:"asset_id"`
	MetadataLocation  string    `json:"metadata_location"`
	Snapshots         int       `json:"snapshots"`
	ManifestListsRead int       `json:"manifest_lists_read"` // from storage; the rest came from the cache
	ManifestListsHit  int       `json:"manifest_lists_cached"`
	ManifestsRead     int       `json:"manifests_read"` // from storage; the rest came from the cache
	ManifestsCached   int       `json:"manifests_cached"`
	ManifestsInMemory int       `json:"manifests_in_memory"` // whose figures this process kept: not decoded again
	EntriesRead       int64     `json:"entries_read"`        // decoded from storage
	Duration          string    `json:"duration"`
}
