#[test]
fn t() {
    let _ = hdf5::File::open("x");
}
