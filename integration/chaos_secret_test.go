package integration_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/batonlock/baton/internal/redistest"
	"github.com/batonlock/baton/observe"
)

// secretForms are the forms in which a round's passwords may be written
// out: as given, percent-encoded as a URL's user information, path or
// query encodes them, and their random cores alone (see chaosPassword),
// which every encoding keeps as they are.
type secretForms []string

func newSecretForms(secrets ...string) secretForms {
	var forms secretForms
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, f := range redistest.SecretForms(s) {
			add(f)
		}
		if core, ok := strings.CutPrefix(s, "chaos/"); ok {
			add(core[:min(len(core), 12)])
		}
	}
	// Longest first, so that redact hides a whole form before its core.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	return forms
}

// in reports whether text holds any of the forms.
func (s secretForms) in(text string) bool {
	for _, f := range s {
		if strings.Contains(text, f) {
			return true
		}
	}
	return false
}

// redact hides every form in text, so that a report that quotes a leak
// does not leak it again.
func (s secretForms) redact(text string) string {
	for _, f := range s {
		text = strings.ReplaceAll(text, f, "[PASSWORD]")
	}
	return text
}

// leakScan reads every text a process of a chaos round gives its user
// (the errors its calls return, each with every error it wraps, its
// Lockers' observer events and log records) for the round's passwords,
// and records each text that holds one (recLeak, redacted). It counts
// what it read, so that the round can tell a clean scan from an empty
// one.
type leakScan struct {
	forms secretForms
	rec   *chaosRecorder
	// Counted as read: errors (with the errors they wrap), events, log
	// records.
	errs, events, logs atomic.Int64
}

// text scans one text, from where.
func (s *leakScan) text(where, text string) {
	if s.forms.in(text) {
		s.rec.add(chaosRecord{Kind: recLeak, ID: s.rec.newID(s.rec.proc + ".leak"), Call: now(), Ret: now(),
			Note: where + ": " + s.forms.redact(text)})
	}
}

// err scans err's text and that of every error it wraps (Unwrap, and
// errors.Join's Unwrap []error), which a caller may unwrap and print, and
// returns err's text, for the history.
func (s *leakScan) err(where string, err error) string {
	if err == nil {
		return ""
	}
	s.errs.Add(1)
	s.chain(where, err)
	return err.Error()
}

func (s *leakScan) chain(where string, err error) {
	s.text(fmt.Sprintf("%s (%T)", where, err), err.Error())
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			s.chain(where, inner)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if e != nil {
				s.chain(where, e)
			}
		}
	}
}

// Observe scans an event of a Locker (lock.WithObserver): what it says,
// and its error with every error that wraps.
func (s *leakScan) Observe(e observe.Event) {
	s.events.Add(1)
	s.text("event "+e.Kind.String(), fmt.Sprintf("%v %v %q %v %v %v", e.Kind, e.Op, e.Key, e.Mode, e.How, e.Reason))
	if e.Err != nil {
		s.chain("event "+e.Kind.String(), e.Err)
	}
}

// Write scans a log record of a Locker's logger (lock.WithLogger).
func (s *leakScan) Write(p []byte) (int, error) {
	s.logs.Add(1)
	s.text("log record", string(p))
	return len(p), nil
}

// recordCounts adds what the scan read to the history (recScanned).
func (s *leakScan) recordCounts() {
	s.rec.add(chaosRecord{Kind: recScanned, ID: s.rec.proc + ".scanned", Call: now(), Ret: now(),
		Note: fmt.Sprintf("errors=%d events=%d logs=%d", s.errs.Load(), s.events.Load(), s.logs.Load())})
}

// scanCounts counts what checkSecrets read for a password: the texts
// of the records, the errors (each with those it wraps), events and log
// records the processes' scans read, and the bytes the workers wrote.
type scanCounts struct{ texts, errs, events, logs, output int }

// checkSecrets checks that no text of a round holds one of its
// passwords: what each process's scan found as it went (recLeak), every
// text of every record (calls' errors, panics, faults and their errors,
// notes), and what each worker process wrote (outputs: by process, the
// path of the file its stdout and stderr went to). It redacts the
// records in place, so that nothing printed about the round afterwards
// (the other checks' findings, a violation's history, the round's
// faults) says a password either: it runs before them.
func checkSecrets(recs []chaosRecord, outputs map[string]string, forms secretForms) ([]chaosFinding, scanCounts) {
	var found []chaosFinding
	var n scanCounts
	flag := func(key string, at int64, ids []string, format string, args ...any) {
		found = append(found, chaosFinding{kind: findSecret, what: fmt.Sprintf(format, args...), key: key, at: at, ids: ids})
	}
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case recLeak:
			flag("", r.Call, []string{r.ID}, "a text said a password: %s", r.Note)
			continue
		case recScanned:
			var errs, events, logs int
			fmt.Sscanf(r.Note, "errors=%d events=%d logs=%d", &errs, &events, &logs)
			n.errs += errs
			n.events += events
			n.logs += logs
			continue
		}
		for _, field := range []*string{&r.Err, &r.Note, &r.Holder, &r.ID, &r.Actor, &r.Key, &r.Lease} {
			if *field == "" {
				continue
			}
			n.texts++
			if forms.in(*field) {
				*field = forms.redact(*field)
				flag(r.Key, r.Call, []string{r.ID}, "%s %s records a password: %s", r.Kind, r.ID, firstLine(*field, 300))
			}
		}
	}
	procs := make([]string, 0, len(outputs))
	for p := range outputs {
		procs = append(procs, p)
	}
	slices.Sort(procs)
	for _, proc := range procs {
		b, err := os.ReadFile(outputs[proc])
		if err != nil {
			flag("", 0, nil, "the output of %s cannot be read to be checked: %v", proc, err)
			continue
		}
		n.output += len(b)
		for line := range strings.Lines(string(b)) {
			if forms.in(line) {
				flag("", 0, nil, "worker %s wrote a password: %s", proc, firstLine(forms.redact(line), 300))
			}
		}
	}
	return found, n
}

// redactingWriter passes on what is written to it with every password
// hidden: a worker's stderr, on its way to the test's, so that a leak the
// round reports is not printed in the clear beside the report.
type redactingWriter struct {
	w     interface{ Write([]byte) (int, error) }
	forms secretForms
}

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := r.w.Write([]byte(r.forms.redact(string(p)))); err != nil {
		return 0, err
	}
	return len(p), nil
}
