// Decodes a Pyroscope push request body (push.v1.PushRequest, application/proto) from standard
// input with the types Grafana generates from its published protocol definitions
// (github.com/grafana/pyroscope/api), and each raw profile with pprof's own parser
// (github.com/google/pprof/profile); prints what they hold as JSON for tests/push_engines.rs.
package main

import (
	"encoding/json"
	"io"
	"os"
	"sort"

	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"google.golang.org/protobuf/proto"
)

type sampleOut struct {
	ID                 string            `json:"id"`
	SampleTypes        []string          `json:"sample_types"`
	Samples            int               `json:"samples"`
	Totals             []int64           `json:"totals"`
	TopLeaf            string            `json:"top_leaf"`
	LabelKeys          []string          `json:"label_keys"`
	LocationsUnmapped  int               `json:"locations_unmapped"`
	Comments           []string          `json:"comments"`
	TimeNanos          int64             `json:"time_nanos"`
	DurationNanos      int64             `json:"duration_nanos"`
	LabelValues        map[string][]string `json:"label_values"`
}

type seriesOut struct {
	Labels  map[string]string `json:"labels"`
	Samples []sampleOut       `json:"samples"`
}

func fail(err error) {
	os.Stderr.WriteString(err.Error() + "\n")
	os.Exit(1)
}

func main() {
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	var req pushv1.PushRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		fail(err)
	}
	out := []seriesOut{}
	for _, s := range req.Series {
		so := seriesOut{Labels: map[string]string{}}
		for _, l := range s.Labels {
			so.Labels[l.Name] = l.Value
		}
		for _, raw := range s.Samples {
			p, err := profile.ParseData(raw.RawProfile)
			if err != nil {
				fail(err)
			}
			if err := p.CheckValid(); err != nil {
				fail(err)
			}
			o := sampleOut{ID: raw.ID, Samples: len(p.Sample), Comments: p.Comments,
				TimeNanos: p.TimeNanos, DurationNanos: p.DurationNanos, LabelValues: map[string][]string{}}
			for _, st := range p.SampleType {
				o.SampleTypes = append(o.SampleTypes, st.Type+"/"+st.Unit)
			}
			o.Totals = make([]int64, len(p.SampleType))
			leaves := map[string]int64{}
			keys := map[string]bool{}
			for _, smp := range p.Sample {
				for i, v := range smp.Value {
					o.Totals[i] += v
				}
				if len(smp.Location) > 0 && len(smp.Location[0].Line) > 0 {
					leaves[smp.Location[0].Line[0].Function.Name] += smp.Value[len(smp.Value)-1]
				}
				for k, vs := range smp.Label {
					keys[k] = true
					o.LabelValues[k] = append(o.LabelValues[k], vs...)
				}
			}
			best := int64(-1)
			for name, v := range leaves {
				if v > best || (v == best && name < o.TopLeaf) {
					best, o.TopLeaf = v, name
				}
			}
			for k := range keys {
				o.LabelKeys = append(o.LabelKeys, k)
			}
			sort.Strings(o.LabelKeys)
			for _, loc := range p.Location {
				if loc.Mapping == nil {
					o.LocationsUnmapped++
				}
			}
			so.Samples = append(so.Samples, o)
		}
		out = append(out, so)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fail(err)
	}
}
