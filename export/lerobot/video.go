package lerobot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// VideoPath is info.json's video_path when the export writes videos.
const VideoPath = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"

// VideoFile returns the path, relative to the export directory, of a
// video file of feature key.
func VideoFile(key string, chunk, file int) string {
	return fmt.Sprintf("videos/%s/chunk-%03d/file-%03d.mp4", key, chunk, file)
}

// Video encoding: H.264 (libx264) in MP4, every second frame a key frame
// (-g 2, as LeRobot encodes, so seeking to any frame decodes at most one
// other), yuv420p (4:2:0, what every decoder plays) for even sizes and
// yuv444p for odd ones (4:2:0 needs even sizes).
const (
	videoCodec = "h264"
	videoGOP   = 2
	videoCRF   = 23
)

// videoFeature is the info of one video feature in info.json.
func videoInfo(f *feature, fps int) orderedMap {
	return orderedMap{
		{"video.height", f.h}, {"video.width", f.w}, {"video.codec", videoCodec},
		{"video.pix_fmt", videoPixFmt(f)}, {"video.is_depth_map", false}, {"video.fps", fps},
		{"video.channels", 3}, {"has_audio", false},
	}
}

func videoPixFmt(f *feature) string {
	if f.h%2 == 0 && f.w%2 == 0 {
		return "yuv420p"
	}
	return "yuv444p"
}

// videoWriter encodes one video feature's frames with ffmpeg into video
// files of about limit bytes, starting a new file only between episodes.
type videoWriter struct {
	ffmpeg string
	dir    string // the export directory
	f      *feature
	fps    int
	limit  int64

	fileNo int   // the file being written
	frames int64 // frames in it so far
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	tmp    string
}

// position is the chunk and file index of the file the next frame goes
// to, and the time of that frame in the file.
func (v *videoWriter) position() (chunk, file int, from float64) {
	return v.fileNo / ChunksSize, v.fileNo % ChunksSize, float64(v.frames) / float64(v.fps)
}

func (v *videoWriter) start(ctx context.Context) error {
	final := filepath.Join(v.dir, filepath.FromSlash(VideoFile(v.f.name, v.fileNo/ChunksSize, v.fileNo%ChunksSize)))
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(final), err)
	}
	v.tmp = filepath.Join(filepath.Dir(final), "."+filepath.Base(final)+".tmp")
	v.stderr.Reset()
	v.cmd = exec.CommandContext(ctx, v.ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
		"-f", "rawvideo", "-pix_fmt", "rgb24", "-s", fmt.Sprintf("%dx%d", v.f.w, v.f.h), "-framerate", strconv.Itoa(v.fps), "-i", "-",
		"-c:v", "libx264", "-preset", "veryfast", "-crf", strconv.Itoa(videoCRF), "-g", strconv.Itoa(videoGOP),
		"-pix_fmt", videoPixFmt(v.f), "-movflags", "+faststart", "-f", "mp4", v.tmp)
	v.cmd.Stderr = &v.stderr
	stdin, err := v.cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("ffmpeg: %w", err)
	}
	v.stdin = stdin
	if err := v.cmd.Start(); err != nil {
		return fmt.Errorf("%w: run %s: %w", ErrFFmpeg, v.ffmpeg, err)
	}
	v.frames = 0
	return nil
}

// add encodes one frame of HxWx3 pixels.
func (v *videoWriter) add(ctx context.Context, pix []byte) error {
	if v.cmd == nil {
		if err := v.start(ctx); err != nil {
			return err
		}
	}
	if _, err := v.stdin.Write(pix); err != nil {
		return v.failed(err)
	}
	v.frames++
	return nil
}

func (v *videoWriter) failed(err error) error {
	v.stdin.Close()
	werr := v.cmd.Wait()
	v.cmd = nil
	msg := strings.TrimSpace(v.stderr.String())
	if msg == "" && werr != nil {
		msg = werr.Error()
	}
	return fmt.Errorf("%w: encoding %s: %v: %s", ErrFFmpeg, v.f.name, err, msg)
}

// endEpisode ends the file once it has reached the size limit.
func (v *videoWriter) endEpisode() error {
	if v.cmd == nil {
		return nil
	}
	if st, err := os.Stat(v.tmp); err != nil || st.Size() < v.limit {
		return nil
	}
	return v.finish()
}

func (v *videoWriter) finish() error {
	if v.cmd == nil {
		return nil
	}
	if err := v.stdin.Close(); err != nil {
		return v.failed(err)
	}
	err := v.cmd.Wait()
	v.cmd = nil
	if err != nil {
		return fmt.Errorf("%w: encoding %s: %v: %s", ErrFFmpeg, v.f.name, err, strings.TrimSpace(v.stderr.String()))
	}
	final := filepath.Join(v.dir, filepath.FromSlash(VideoFile(v.f.name, v.fileNo/ChunksSize, v.fileNo%ChunksSize)))
	f, err := os.Open(v.tmp)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", v.tmp, err)
	}
	if err := os.Rename(v.tmp, final); err != nil {
		return fmt.Errorf("rename %s: %w", v.tmp, err)
	}
	if err := syncDir(filepath.Dir(final)); err != nil {
		return err
	}
	v.fileNo++
	v.frames = 0
	return nil
}

// abort stops an encoder after a failure elsewhere.
func (v *videoWriter) abort() {
	if v.cmd == nil {
		return
	}
	v.stdin.Close()
	v.cmd.Process.Kill()
	v.cmd.Wait()
	v.cmd = nil
}

// findFFmpeg returns the ffmpeg to run: path when set, else ffmpeg on
// PATH.
func findFFmpeg(path string) (string, error) {
	if path == "" {
		path = "ffmpeg"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%w: %s not found", ErrFFmpeg, path)
		}
		return "", fmt.Errorf("%w: %v", ErrFFmpeg, err)
	}
	return p, nil
}
