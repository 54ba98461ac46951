//! Event batches as Arrow IPC stream bytes, for consumers in another runtime (Python's
//! `pyarrow.ipc.open_stream` reads them). This module owns only the encoding.

use arrow_array::RecordBatch;
use arrow_ipc::writer::StreamWriter;
use arrow_schema::ArrowError;

/// `batch` as a complete Arrow IPC stream: its schema, the batch, the end-of-stream marker.
pub fn to_ipc_stream(batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::try_new(&mut bytes, &batch.schema())?;
    writer.write(batch)?;
    writer.finish()?;
    drop(writer);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EventBatch, Kind, Row};
    use arrow_ipc::reader::StreamReader;

    #[test]
    fn a_batch_survives_the_round_trip() {
        let mut events = EventBatch::new();
        events.push(&Row { name: Some("load"), ..Row::new(5, Kind::ActivityStart) });
        events.push(&Row::new(9, Kind::ActivityStop));
        let batch = events.finish();
        let bytes = to_ipc_stream(&batch).unwrap();
        let mut reader = StreamReader::try_new(std::io::Cursor::new(bytes), None).unwrap();
        let read = reader.next().expect("one batch").unwrap();
        assert_eq!(read, batch);
        assert!(reader.next().is_none());
    }
}
