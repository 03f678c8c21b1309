"""What asr measures about actuators and robots: datasheets (datasheet), frequency responses
(frequency), parameter identification from data (identification) and parameter sweeps (sweep).
The functions themselves are asr.datasheet, asr.frequency_response, asr.identify and
asr.sweep; this package re-exports none of them, so that each of its module names means the
module."""
