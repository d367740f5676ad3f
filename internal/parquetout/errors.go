package parquetout

import "errors"

// Sentinel errors; match them with errors.Is.
var (
	// ErrClosed is returned by an encoder used after Close or Abort.
	ErrClosed = errors.New("parquetout: encoder already closed or aborted")
	// ErrLeafCount is returned by StepsWriter.Write for a row whose
	// observation or action leaves are not nil and not one per leaf of
	// the space.
	ErrLeafCount = errors.New("parquetout: wrong number of leaves for the space")
	// ErrLeafSize is returned by StepsWriter.Write for a fixed-size leaf
	// whose length is not the leaf's per-lane byte size.
	ErrLeafSize = errors.New("parquetout: leaf has the wrong byte size")
	// ErrLeafText is returned by StepsWriter.Write for a Text leaf that is
	// not valid UTF-8.
	ErrLeafText = errors.New("parquetout: text leaf is not valid UTF-8")
	// ErrCodec is returned for an unknown compression name in a Config.
	ErrCodec = errors.New("parquetout: unknown compression codec")
	// ErrFooter is wrapped by the *FooterError of CheckFooter: the file's
	// footer is not valid by the Parquet format specification.
	ErrFooter = errors.New("parquetout: footer is not valid Parquet")
	// ErrFooterUnreadable is wrapped too when the footer cannot be read
	// at all: the file is too short, lacks a magic, declares a footer
	// length that does not fit, or its thrift does not decode.
	ErrFooterUnreadable = errors.New("parquetout: no readable Parquet footer")
	// ErrPage is wrapped by the *PageError of CheckPages: a page does not
	// match its checksum or its column chunk.
	ErrPage = errors.New("parquetout: page is damaged")
)
