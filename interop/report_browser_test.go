package interop

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/sim"
)

// screenshotsEnv names the directory TestReportInBrowser writes its
// screenshots to (.ci/run sets it); without it they go to the test's
// temporary directory.
const screenshotsEnv = "RLREC_SCREENSHOTS"

// chromiumInstall is how a machine gets the browser the test drives.
const chromiumInstall = "apt-get install chromium (as root; .ci/run installs it when missing)"

// chromiumPath returns the browser to drive: $RLREC_CHROMIUM, else
// chromium on PATH. Without one the test fails, naming the install.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RLREC_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no chromium on PATH to load rlrec report's page in; %s", chromiumInstall)
	return ""
}

// browser starts a headless Chromium with an empty profile and no
// network of its own, and returns a context for chromedp actions.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		// The machines that run this have no outside network: without
		// these Chromium's own connections are refused and it stalls.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v (is it installed? %s)", chromiumPath(t), err, chromiumInstall)
	}
	return ctx
}

// pageState is what the page's DOM holds after its script ran.
type pageState struct {
	Players     *string         `json:"players"`
	SVGs        int             `json:"svgs"`
	SVGsDrawn   int             `json:"svgsDrawn"`
	Images      int             `json:"images"`
	ImagesDrawn int             `json:"imagesDrawn"`
	Recordings  []recordingView `json:"recordings"`
	Background  [3]float64      `json:"background"`
	Foreground  [3]float64      `json:"foreground"`
}

type recordingView struct {
	Name     string                 `json:"name"`
	Sections map[string]sectionView `json:"sections"`
}

type sectionView struct {
	Text   int     `json:"text"`
	SVGs   int     `json:"svgs"`
	Images int     `json:"images"`
	Height float64 `json:"height"`
}

// readPage collects pageState in the browser: every svg with a laid-out
// box and drawn content (getBBox), every image decoded (naturalWidth),
// each recording's sections, and the page's colours.
const readPage = `(() => {
  const rgb = (c) => (c.match(/[\d.]+/g) || [0, 0, 0]).slice(0, 3).map(Number);
  const out = {players: document.documentElement.getAttribute("data-players"), svgs: 0, svgsDrawn: 0,
    images: 0, imagesDrawn: 0, recordings: [],
    background: rgb(getComputedStyle(document.body).backgroundColor), foreground: rgb(getComputedStyle(document.body).color)};
  for (const svg of document.querySelectorAll("svg")) {
    out.svgs++;
    const r = svg.getBoundingClientRect(), b = svg.getBBox();
    if (r.width > 0 && r.height > 0 && b.width > 0 && b.height > 0) out.svgsDrawn++;
  }
  for (const img of document.images) {
    out.images++;
    if (img.complete && img.naturalWidth > 0 && img.naturalHeight > 0) out.imagesDrawn++;
  }
  for (const rec of document.querySelectorAll("section.recording")) {
    const sections = {};
    for (const s of rec.querySelectorAll("[data-section]")) {
      sections[s.dataset.section] = {text: s.innerText.trim().length, svgs: s.querySelectorAll("svg").length,
        images: s.querySelectorAll("img").length, height: s.getBoundingClientRect().height};
    }
    out.recordings.push({name: rec.querySelector("h2").innerText, sections});
  }
  return out;
})()`

var reportSections = []string{"returns", "success", "rewards", "features", "findings", "frames"}

// TestReportInBrowser makes the report of rlrec demo's ROOT (plus an
// all-leaves recording, so every built-in env has one) with the rlrec
// command, loads it in headless Chromium and checks, in the DOM after the
// page's script ran: every section of every recording is there and laid
// out, every plot drew, every frame decoded, a player plays from the
// keyboard; and that a screenshot is not blank, in the light and the
// dark scheme. It writes a screenshot of each env's own report to
// $RLREC_SCREENSHOTS (or the test's temporary directory).
func TestReportInBrowser(t *testing.T) {
	ctx := browser(t)
	bin := rlrecBinary(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "demo")
	runOK := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("rlrec %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	runOK("demo", "--out", root)
	stream := filepath.Join(dir, "all-leaves.stream")
	runOK("simulate", "--env", "all-leaves", "--envs", "2", "--episodes", "6", "--autoreset", "next-step", "-o", stream)
	runOK("ingest", "--out", root, stream)

	// One recording per env for its own page.
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	byEnv := map[string]dataset.Recording{}
	for _, rec := range d.Recordings() {
		s, err := d.Session(rec)
		if err != nil || s.Row() == nil {
			t.Fatalf("%s: no sessions row (%v)", rec, err)
		}
		env := strings.TrimPrefix(s.Row().EnvComponentID, "env/")
		if _, ok := byEnv[env]; !ok {
			byEnv[env] = rec
		}
	}
	total := len(d.Recordings())
	d.Close()
	for _, env := range sim.Envs() {
		if _, ok := byEnv[env]; !ok {
			t.Fatalf("no recording of the built-in env %s in %s", env, root)
		}
	}

	shots := os.Getenv(screenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	whole := filepath.Join(dir, "report.html")
	runOK("report", root, "-o", whole)
	t.Run("whole ROOT", func(t *testing.T) {
		st := load(t, ctx, whole, false)
		checkPage(t, st, total)
		checkPlayer(t, ctx)
	})
	for _, env := range sim.Envs() {
		t.Run(env, func(t *testing.T) {
			rec := byEnv[env]
			page := filepath.Join(dir, env+".html")
			runOK("report", root, "--session", rec.SessionID, "--env", rec.EnvID, "-o", page)
			for _, dark := range []bool{false, true} {
				st := load(t, ctx, page, dark)
				checkPage(t, st, 1)
				lum := func(c [3]float64) float64 { return (0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]) / 255 }
				bg, fg := lum(st.Background), lum(st.Foreground)
				if dark && (bg > 0.2 || fg < 0.7) || !dark && (bg < 0.8 || fg > 0.3) {
					t.Errorf("dark=%t: background luminance %.2f, text %.2f: not the scheme asked for", dark, bg, fg)
				}
				shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				checkNotBlank(t, shot, dark)
				name := env + ".png"
				if dark {
					name = env + "-dark.png"
				}
				if err := os.WriteFile(filepath.Join(shots, name), shot, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	t.Logf("screenshots in %s", shots)
}

// load opens a page from disk in the light or dark scheme and waits for
// its script to have run.
func load(t *testing.T, ctx context.Context, path string, dark bool) pageState {
	t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := chromedp.Do(tctx,
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
			})
			return err
		}),
		chromedp.Navigate("file://"+path),
	)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](`document.documentElement.hasAttribute("data-players")`)); err != nil {
		t.Fatalf("%s: the page's script did not run: %v", path, err)
	}
	st, err := chromedp.Run(tctx, chromedp.Evaluate[pageState](readPage))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return st
}

func checkPage(t *testing.T, st pageState, recordings int) {
	t.Helper()
	if len(st.Recordings) != recordings {
		t.Fatalf("%d recording sections, want %d", len(st.Recordings), recordings)
	}
	if st.SVGs == 0 || st.SVGsDrawn != st.SVGs {
		t.Errorf("%d of %d plots drawn", st.SVGsDrawn, st.SVGs)
	}
	if st.ImagesDrawn != st.Images {
		t.Errorf("%d of %d frames decoded", st.ImagesDrawn, st.Images)
	}
	frames := 0
	for _, r := range st.Recordings {
		for _, name := range reportSections {
			s, ok := r.Sections[name]
			switch {
			case !ok:
				t.Errorf("%s: no %s section", r.Name, name)
			case s.Text == 0 || s.Height < 10:
				t.Errorf("%s: section %s is empty (%d characters, %.0f px high)", r.Name, name, s.Text, s.Height)
			}
		}
		if r.Sections["returns"].SVGs < 2 || r.Sections["rewards"].SVGs < 1 || r.Sections["features"].SVGs < 1 {
			t.Errorf("%s: plots missing: %+v", r.Name, r.Sections)
		}
		frames += r.Sections["frames"].Images
	}
	if strings.Contains(fmt.Sprint(st.Recordings), "pick-place") && frames == 0 {
		t.Errorf("pick-place reported, and no frame shown")
	}
}

// checkPlayer plays the first sequence from the keyboard: Enter on the
// Play button, then ArrowRight on the frame slider.
func checkPlayer(t *testing.T, ctx context.Context) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	frame := func() int {
		n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`Number(document.querySelector("[data-player]").getAttribute("data-frame"))`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if f := frame(); f != 0 {
		t.Fatalf("the player starts at frame %d", f)
	}
	if err := chromedp.Do(tctx, chromedp.Focus(chromedp.CSS(`[data-play]`)), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tctx, chromedp.Poll[chromedp.Void](`Number(document.querySelector("[data-player]").getAttribute("data-frame")) >= 3`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("Enter on Play did not play: frame %d: %v", frame(), err)
	}
	if err := chromedp.Do(tctx, chromedp.KeyEvent(kb.Enter)); err != nil { // pause
		t.Fatal(err)
	}
	pressed, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.querySelector("[data-play]").getAttribute("aria-pressed")`))
	if err != nil || pressed != "false" {
		t.Fatalf("Enter again did not pause: aria-pressed %q (%v)", pressed, err)
	}
	before := frame()
	if err := chromedp.Do(tctx, chromedp.Focus(chromedp.CSS(`[data-seek]`)), chromedp.KeyEvent(kb.ArrowRight)); err != nil {
		t.Fatal(err)
	}
	if after := frame(); after != before+1 {
		t.Fatalf("ArrowRight on the slider: frame %d, want %d", after, before+1)
	}
}

// checkNotBlank decodes a screenshot and checks that it shows something:
// many colours, and a good share of pixels unlike the background.
func checkNotBlank(t *testing.T, shot []byte, dark bool) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	bounds := img.Bounds()
	bg := color.NRGBAModel.Convert(img.At(bounds.Min.X, bounds.Min.Y)).(color.NRGBA)
	colours := map[color.NRGBA]bool{}
	var differ, all int
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
			colours[c] = true
			if c != bg {
				differ++
			}
			all++
		}
	}
	if len(colours) < 64 || differ < all/50 {
		t.Errorf("screenshot %v looks blank: %d colours, %d of %d pixels unlike the background %v", bounds.Size(), len(colours), differ, all, bg)
	}
	if lum := (0.2126*float64(bg.R) + 0.7152*float64(bg.G) + 0.0722*float64(bg.B)) / 255; dark != (lum < 0.5) {
		t.Errorf("dark=%t, and the screenshot's background %v has luminance %.2f", dark, bg, lum)
	}
}
