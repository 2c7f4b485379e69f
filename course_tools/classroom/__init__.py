"""Running a class: roster, access, hub, exchange, zip collection, LMS, grades and similarity."""
