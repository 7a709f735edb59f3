fn main() {
    #[cfg(feature = "controlled")]
    {
        let path = decode_baseline_controlled::identity::libmlx_path().unwrap();
        println!("{} {} {}", decode_baseline_controlled::identity::mlx_version().unwrap(), path.display(), decode_baseline_controlled::identity::sha256_file(&path).unwrap());
    }
}
