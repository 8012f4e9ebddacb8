package viewcheck

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os/exec"
	"strconv"
)

// A Frame is one frame of a flame graph as its SVG draws it: a group of
// a <title>, a <rect> and maybe a <text> label.
type Frame struct {
	Title      string
	X, Y, W, H float64
	Fill       color.RGBA
	Label      string
}

// SVG is a flame graph's SVG, parsed as XML.
type SVG struct {
	Width, Height int
	Background    color.RGBA // the first rect's, covering the image
	Frames        []Frame
}

// ParseSVG parses a flame graph's SVG: it must be well-formed XML, an
// <svg> of whole width and height whose first <rect> is the background
// and whose frames are <g> groups of a <title> and a <rect>.
func ParseSVG(data []byte) (*SVG, error) {
	type rect struct {
		X      float64 `xml:"x,attr"`
		Y      float64 `xml:"y,attr"`
		Width  float64 `xml:"width,attr"`
		Height float64 `xml:"height,attr"`
		Fill   string  `xml:"fill,attr"`
	}
	type doc struct {
		Width  int    `xml:"width,attr"`
		Height int    `xml:"height,attr"`
		NS     string `xml:"xmlns,attr"`
		Rect   []rect `xml:"rect"`
		Groups []struct {
			Frames []struct {
				Title string `xml:"title"`
				Text  string `xml:"text"`
				Rect  rect   `xml:"rect"`
			} `xml:"g"`
		} `xml:"g"`
	}
	var d doc
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("not well-formed XML: %w", err)
	}
	if d.Width <= 0 || d.Height <= 0 || len(d.Rect) == 0 || d.NS != "http://www.w3.org/2000/svg" {
		return nil, errors.New("not an <svg> of a size with a background rect")
	}
	bg, err := parseColour(d.Rect[0].Fill)
	if err != nil {
		return nil, err
	}
	s := &SVG{Width: d.Width, Height: d.Height, Background: bg}
	for _, g := range d.Groups {
		for _, f := range g.Frames {
			fill, err := parseColour(f.Rect.Fill)
			if err != nil {
				return nil, fmt.Errorf("frame %q: %w", f.Title, err)
			}
			s.Frames = append(s.Frames, Frame{Title: f.Title, X: f.Rect.X, Y: f.Rect.Y, W: f.Rect.Width, H: f.Rect.Height, Fill: fill, Label: f.Text})
		}
	}
	return s, nil
}

// parseColour reads "#rrggbb".
func parseColour(s string) (color.RGBA, error) {
	if len(s) != 7 || s[0] != '#' {
		return color.RGBA{}, fmt.Errorf("colour %q: want #rrggbb", s)
	}
	v, err := strconv.ParseUint(s[1:], 16, 32)
	if err != nil {
		return color.RGBA{}, fmt.Errorf("colour %q: %w", s, err)
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}, nil
}

// Render draws an SVG with rsvg-convert (librsvg, as GNOME and many
// tools draw SVG) and returns the picture.
func Render(svg []byte) (image.Image, error) {
	path, err := exec.LookPath("rsvg-convert")
	if err != nil {
		return nil, fmt.Errorf("rsvg-convert is not installed (apt-get install librsvg2-bin; make test installs it): %w", err)
	}
	cmd := exec.Command(path, "--format", "png")
	cmd.Stdin = bytes.NewReader(svg)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("rsvg-convert: %w: %s", err, errOut.Bytes())
	}
	return png.Decode(&out)
}

// At is the colour of the picture's pixel at x, y.
func At(img image.Image, x, y int) color.RGBA {
	r, g, b, a := img.At(x, y).RGBA()
	return color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(a >> 8)}
}
